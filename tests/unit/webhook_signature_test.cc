#include "phasekey/webhook_endpoint.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace phasekey {
namespace {

using std::chrono::seconds;
using std::chrono::system_clock;

constexpr char kSecret[] = "whsec_test";
constexpr char kPayload[] = R"({"id":"evt_1"})";
constexpr std::int64_t kT = 1700000000;

system_clock::time_point At(std::int64_t unix_seconds) { return system_clock::time_point(seconds(unix_seconds)); }

TEST(WebhookSignatureTest, SignsLikeStripeWithHmacSha256OverTimestampDotPayload) {
  // Expected value from `printf '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test`.
  EXPECT_EQ(SignWebhook(kSecret, kPayload, kT),
            "t=1700000000,v1=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925");
}

TEST(WebhookSignatureTest, AcceptsItsOwnSignatureWithinTheTolerance) {
  const std::string header = SignWebhook(kSecret, kPayload, kT);
  EXPECT_TRUE(VerifyWebhookSignature(header, kPayload, kSecret, At(kT)).ok());
  EXPECT_TRUE(VerifyWebhookSignature(header, kPayload, kSecret, At(kT + 300)).ok());
  EXPECT_TRUE(VerifyWebhookSignature(header, kPayload, kSecret, At(kT - 300)).ok());
}

TEST(WebhookSignatureTest, RefusesAStaleOrFutureTimestamp) {
  const std::string header = SignWebhook(kSecret, kPayload, kT);
  Status stale = VerifyWebhookSignature(header, kPayload, kSecret, At(kT + 301));
  EXPECT_EQ(stale.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stale.message().find("tolerance"), std::string::npos);
  EXPECT_FALSE(VerifyWebhookSignature(header, kPayload, kSecret, At(kT - 301)).ok());
  WebhookSignatureOptions wide;
  wide.tolerance = seconds(3600);
  EXPECT_TRUE(VerifyWebhookSignature(header, kPayload, kSecret, At(kT + 301), wide).ok());
}

TEST(WebhookSignatureTest, RefusesATamperedPayloadOrAnotherSecret) {
  const std::string header = SignWebhook(kSecret, kPayload, kT);
  EXPECT_FALSE(VerifyWebhookSignature(header, R"({"id":"evt_2"})", kSecret, At(kT)).ok());
  EXPECT_FALSE(VerifyWebhookSignature(header, kPayload, "whsec_other", At(kT)).ok());
  // The timestamp is signed too: moving it breaks the signature.
  std::string moved = header;
  moved.replace(2, 10, "1700000001");
  EXPECT_FALSE(VerifyWebhookSignature(moved, kPayload, kSecret, At(kT)).ok());
}

TEST(WebhookSignatureTest, AcceptsAnyOfSeveralSignaturesForASecretRotation) {
  const std::string good = SignWebhook(kSecret, kPayload, kT);
  const std::string old = SignWebhook("whsec_old", kPayload, kT);
  const std::string both = old + "," + good.substr(good.find("v1="));
  EXPECT_TRUE(VerifyWebhookSignature(both, kPayload, kSecret, At(kT)).ok());
  EXPECT_FALSE(VerifyWebhookSignature(old, kPayload, kSecret, At(kT)).ok());
}

TEST(WebhookSignatureTest, RefusesMalformedHeaders) {
  const std::string v1 = SignWebhook(kSecret, kPayload, kT).substr(13);  // "v1=..."
  for (const std::string& header :
       {std::string(""), std::string("garbage"), v1, std::string("t=1700000000"), "t=abc," + v1,
        "t=1700000000,t=1700000000," + v1, std::string("t=1700000000,v1=zz"), "t=1700000000,v0=" + v1.substr(3)}) {
    Status s = VerifyWebhookSignature(header, kPayload, kSecret, At(kT));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << header;
  }
}

TEST(WebhookSignatureTest, RefusesToVerifyWithAnEmptySecret) {
  const std::string header = SignWebhook("", kPayload, kT);
  EXPECT_EQ(VerifyWebhookSignature(header, kPayload, "", At(kT)).code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace phasekey
