// ProblemJsonResponse (flow.h), the one builder of RFC 9457 problem bodies,
// and ProblemResponse (http.h) on it: the exact bytes, so that every
// problem the engine, the phases and the example make has the same shape.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "phasekey/flow.h"
#include "phasekey/http.h"

namespace phasekey {
namespace {

std::string ContentType(const Response& r) {
  for (const auto& [name, value] : r.headers) {
    if (name == "Content-Type") return value;
  }
  return "";
}

TEST(ProblemJsonResponseTest, TypeTitleStatusThenTheExtraMembers) {
  const Response r = ProblemJsonResponse(402, "about:blank", "Payment declined",
                                         {{"provider", "stripe"}, {"code", "card_declined"}, {"detail", "no"}});
  EXPECT_EQ(r.status, 402);
  EXPECT_EQ(ContentType(r), "application/problem+json");
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.body, R"({"type":"about:blank","title":"Payment declined","status":402,)"
                    R"("code":"card_declined","detail":"no","provider":"stripe"})");
}

TEST(ProblemJsonResponseTest, WithoutExtraHasTheThreeMembers) {
  const Response r = ProblemJsonResponse(500, "about:blank", "Internal Server Error");
  EXPECT_EQ(r.body, R"({"type":"about:blank","title":"Internal Server Error","status":500})");
}

TEST(ProblemJsonResponseTest, ExtraCannotOverrideTypeTitleOrStatus) {
  const Response r =
      ProblemJsonResponse(409, "https://d#x", "T", {{"type", "other"}, {"status", 200}, {"detail", "D"}});
  EXPECT_EQ(r.body, R"({"type":"https://d#x","title":"T","status":409,"detail":"D"})");
}

TEST(ProblemJsonResponseTest, ReplacesInvalidUtf8InsteadOfThrowing) {
  Response r;
  ASSERT_NO_THROW(r = ProblemJsonResponse(500, "about:blank", "T", {{"detail", "bad \xFF byte"}}));
  const nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
  ASSERT_FALSE(body.is_discarded()) << r.body;
  EXPECT_EQ(body["detail"], "bad \xEF\xBF\xBD byte");
}

TEST(ProblemJsonResponseTest, ProblemResponseHasTheSameBytesAndADescribedbyLink) {
  const Response res = ProblemResponse(Problem{409, "key-in-progress", "T", "D"}, "https://example.test/docs");
  EXPECT_EQ(res.status, 409);
  EXPECT_EQ(res.body, R"({"type":"https://example.test/docs#key-in-progress","title":"T","status":409,"detail":"D"})");
  ASSERT_NE(res.headers.Find("Content-Type"), nullptr);
  EXPECT_EQ(*res.headers.Find("Content-Type"), "application/problem+json");
  ASSERT_NE(res.headers.Find("Link"), nullptr);
  EXPECT_EQ(*res.headers.Find("Link"), "<https://example.test/docs>; rel=\"describedby\"");
  EXPECT_EQ(res.body,
            ProblemJsonResponse(409, "https://example.test/docs#key-in-progress", "T", {{"detail", "D"}}).body);
}

}  // namespace
}  // namespace phasekey
