// flow/masking.h: the fields a flow declares masked, in bodies about to be
// shown or logged.
#include "flow/masking.h"

#include <gtest/gtest.h>

namespace phasekey::flow {
namespace {

nlohmann::json Parsed(const std::string& text) { return nlohmann::json::parse(text); }

TEST(MaskingTest, MasksNestedMembersOfAnyTypeAsAString) {
  const std::string body =
      R"({"card":{"number":"4242424242424242","cvc":123,"exp":{"m":12,"y":2030}},"iban":null,"amount":2000})";
  EXPECT_EQ(Parsed(MaskJson(body, {"/card/number", "/card/cvc", "/card/exp", "/iban"})),
            Parsed(R"({"card":{"number":"***","cvc":"***","exp":"***"},"iban":"***","amount":2000})"));
}

TEST(MaskingTest, MasksAnArrayElementByItsIndexOnly) {
  const std::string body = R"({"items":[{"iban":"DE89370400440532013000"},{"iban":"FR7630006000011234567890189"}]})";
  EXPECT_EQ(Parsed(MaskJson(body, {"/items/0/iban"})),
            Parsed(R"({"items":[{"iban":"***"},{"iban":"FR7630006000011234567890189"}]})"));
  EXPECT_EQ(Parsed(MaskJson(R"([1,2,3])", {"/1"})), Parsed(R"([1,"***",3])"));
}

TEST(MaskingTest, LeavesABodyWithoutTheFieldsAsItWasSent) {
  const std::string body = "{\"origin_lat\": 52.52,  \"items\": [1]}";
  EXPECT_EQ(MaskJson(body, {"/card/number", "/items/5", "/items/-", "/origin_lat/x", "/items/01"}), body)
      << "missing members, indexes past the end, '-', members of scalars and non-canonical indexes name nothing";
  EXPECT_EQ(MaskJson(body, {}), body);
  EXPECT_EQ(MaskJson("", {"/card/number"}), "");
}

TEST(MaskingTest, ReadsEscapedSegmentsAsRfc6901Says) {
  const std::string body = R"({"a/b":"slash","m~n":"tilde","a":{"b":"nested"}})";
  EXPECT_EQ(Parsed(MaskJson(body, {"/a~1b", "/m~0n"})), Parsed(R"({"a/b":"***","m~n":"***","a":{"b":"nested"}})"));
}

TEST(MaskingTest, NeverEchoesABodyThatIsNotJson) {
  EXPECT_EQ(MaskJson("card=4242424242424242&cvc=123", {"/card"}), "[not JSON: 29 bytes]");
  EXPECT_EQ(MaskJson("card=4242424242424242&cvc=123", {}), "[not JSON: 29 bytes]") << "even with no masks declared";
  EXPECT_EQ(MaskJson("{\"card\":\"4242\"} trailing", {}), "[not JSON: 24 bytes]");
  EXPECT_EQ(MaskJson("\"\xff\xfe\"", {}), "[not JSON: 4 bytes]") << "not UTF-8";
}

TEST(MaskingTest, IgnoresAPointerThatIsNotRfc6901) {
  EXPECT_EQ(MaskJson(R"({"card":"4242"})", {"card", "/x~2", "/card"}), R"({"card":"***"})");
}

TEST(MaskingTest, MasksAParsedValueToo) {
  EXPECT_EQ(MaskJsonValue(Parsed(R"({"cvc":"123","keep":1})"), {"/cvc"}), Parsed(R"({"cvc":"***","keep":1})"));
}

}  // namespace
}  // namespace phasekey::flow
