// ParseIdempotencyKey (engine/src/http/idempotency_key.cc): the draft's
// sf-string, Stripe's bare keys, and every way a header value is refused.
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "phasekey/http.h"

namespace phasekey {
namespace {

std::string KeyOf(std::string_view header) {
  Result<std::string> r = ParseIdempotencyKey(header);
  EXPECT_TRUE(r.has_value()) << header << " -> " << r.error().message();
  return r ? *r : std::string();
}

std::string ErrorOf(std::string_view header) {
  Result<std::string> r = ParseIdempotencyKey(header);
  EXPECT_FALSE(r.has_value()) << header << " was accepted as " << (r ? *r : "");
  if (r) return "";
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  return r.error().message();
}

TEST(IdempotencyKeyTest, AcceptsTheDraftsQuotedString) {
  EXPECT_EQ(KeyOf("\"8e03978e-40d5-43e8-bc93-6894a57f9324\""), "8e03978e-40d5-43e8-bc93-6894a57f9324");
}

TEST(IdempotencyKeyTest, AcceptsABareKeyAsStripeClientsSendIt) {
  EXPECT_EQ(KeyOf("8e03978e-40d5-43e8-bc93-6894a57f9324"), "8e03978e-40d5-43e8-bc93-6894a57f9324");
  EXPECT_EQ(KeyOf("stripe-node-retry-x/y:z"), "stripe-node-retry-x/y:z");
}

TEST(IdempotencyKeyTest, UnescapesQuotesAndBackslashesInsideQuotes) { EXPECT_EQ(KeyOf(R"("a\"b\\c")"), R"(a"b\c)"); }

TEST(IdempotencyKeyTest, RejectsEscapesOtherThanQuoteAndBackslash) {
  EXPECT_NE(ErrorOf(R"("a\nb")").find("escape"), std::string::npos);
  ErrorOf(R"("a\)");
}

TEST(IdempotencyKeyTest, AllowsSpacesOnlyInsideQuotes) {
  EXPECT_EQ(KeyOf("\"order 42\""), "order 42");
  EXPECT_NE(ErrorOf("order 42").find("quoted"), std::string::npos);
}

// Found by tests/fuzz/idempotency_key_fuzzer: the byte after the closing
// quote was echoed raw into the message.
TEST(IdempotencyKeyTest, NeverEchoesARawByteAfterTheClosingQuote) {
  for (std::string_view bad : {"\"k1\"\xcb\x89=1;x", "\"k1\"\x01", "\"k1\"\n"}) {
    const std::string message = ErrorOf(bad);
    EXPECT_NE(message.find("0x"), std::string::npos) << message;
    for (char c : message) EXPECT_TRUE(c >= 0x20 && c <= 0x7E) << message;
  }
  EXPECT_NE(ErrorOf("\"k1\"x").find("'x'"), std::string::npos);
}

TEST(IdempotencyKeyTest, IgnoresSurroundingWhitespace) {
  EXPECT_EQ(KeyOf("  \"k1\"\t"), "k1");
  EXPECT_EQ(KeyOf(" k1 "), "k1");
}

TEST(IdempotencyKeyTest, RejectsEmptyValuesAndEmptyStrings) {
  ErrorOf("");
  ErrorOf("   ");
  EXPECT_NE(ErrorOf("\"\"").find("empty"), std::string::npos);
}

TEST(IdempotencyKeyTest, Accepts255CharactersAndRejects256) {
  std::string k255(255, 'a');
  EXPECT_EQ(KeyOf(k255), k255);
  EXPECT_EQ(KeyOf("\"" + k255 + "\""), k255);
  std::string message = ErrorOf(std::string(256, 'a'));
  EXPECT_NE(message.find("256"), std::string::npos) << message;
  EXPECT_NE(message.find("255"), std::string::npos) << message;
  ErrorOf("\"" + std::string(256, 'a') + "\"");
}

TEST(IdempotencyKeyTest, CountsAnEscapedCharacterOnce) {
  std::string k = std::string(254, 'a') + "\\\"";  // 255 characters once unescaped
  EXPECT_EQ(KeyOf("\"" + k + "\"").size(), 255u);
}

TEST(IdempotencyKeyTest, RejectsNonAsciiBytesWithoutEchoingThem) {
  std::string message = ErrorOf("caf\xC3\xA9");
  EXPECT_NE(message.find("non-ASCII byte 0xC3 at offset 3"), std::string::npos) << message;
  EXPECT_EQ(message.find("caf"), std::string::npos) << message;
  ErrorOf("\"caf\xC3\xA9\"");
}

TEST(IdempotencyKeyTest, RejectsControlCharacters) {
  EXPECT_NE(ErrorOf(std::string("a\x01"
                                "b"))
                .find("0x01"),
            std::string::npos);
  ErrorOf(
      std::string("\"a\x01"
                  "b\""));
  ErrorOf("\"a\tb\"");  // HTAB is not in sf-string's printable range
  ErrorOf("a\x7F");
  ErrorOf(std::string("a\0b", 3));
}

TEST(IdempotencyKeyTest, RejectsAnUnterminatedString) {
  EXPECT_NE(ErrorOf("\"abc").find("closing quote"), std::string::npos);
}

TEST(IdempotencyKeyTest, IgnoresRfc8941ParametersAfterTheString) {
  EXPECT_EQ(KeyOf("\"k1\";a=1"), "k1");
  EXPECT_EQ(KeyOf("\"k1\";a=1; b;c=\"x;y\";d=?0;e=:AQID:;f=tok/en;g=-1.5"), "k1");
}

TEST(IdempotencyKeyTest, RejectsMalformedParametersAndLists) {
  ErrorOf("\"k1\";A=1");                                                   // keys are lowercase
  ErrorOf("\"k1\";a=");                                                    // a value is required after '='
  ErrorOf("\"k1\";a=\"x");                                                 // unterminated string value
  EXPECT_NE(ErrorOf("\"k1\", \"k2\"").find("single"), std::string::npos);  // two fields combined
  ErrorOf("\"k1\" \"k2\"");
}

TEST(IdempotencyKeyTest, TakesABareValueWholeIncludingSemicolons) { EXPECT_EQ(KeyOf("a;b=1"), "a;b=1"); }

}  // namespace
}  // namespace phasekey
