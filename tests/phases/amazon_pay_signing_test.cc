// Amazon Pay request signing against
// https://developer.amazon.com/docs/amazon-pay-api-v2/signing-requests.html:
// the canonical request is checked line by line against the documented
// example's layout, and signatures are verified by the openssl command-line
// tool (an implementation independent of the signer's code) with the salt
// length each algorithm prescribes.
#include "phasekey/phases/amazon_pay_signing.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

namespace fs = std::filesystem;

// SHA-256 of the empty string (FIPS 180-4 test vector).
constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// The documented example's request: its headers, with an empty body.
ProviderRequest DocumentedExample() {
  ProviderRequest r;
  r.method = "POST";
  r.path = "/live/v2/checkoutSessions";
  r.content_type = "application/json";
  r.headers = {{"x-amz-pay-region", "us"},
               {"X-Amz-Pay-Idempotency-Key", " cllHyiNvS8cJ8Zas "},
               {"x-amz-pay-host", "pay-api.amazon.com"},
               {"x-amz-pay-date", "20190923T231908Z"},
               {"Accept", "application/json"}};
  return r;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const fs::path& p, const std::string& data) { std::ofstream(p, std::ios::binary) << data; }

// Runs `command` through the shell, output discarded; its exit status.
int Shell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

class AmazonPaySigningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Shell("openssl version") != 0) GTEST_SKIP() << "the openssl command-line tool is not installed";
    dir_ = fs::temp_directory_path() / ("amazon_pay_signing_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ASSERT_EQ(Shell("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out " + Path("private.pem")), 0);
    ASSERT_EQ(Shell("openssl pkey -in " + Path("private.pem") + " -pubout -out " + Path("public.pem")), 0);
    private_pem_ = ReadFile(dir_ / "private.pem");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  AmazonPaySigningOptions Options(AmazonPayAlgorithm algorithm) const {
    AmazonPaySigningOptions o;
    o.public_key_id = "SANDBOX-AHWZZO6U5W52OQKJXLCV3RUJ";
    o.private_key_pem = private_pem_;
    o.algorithm = algorithm;
    o.clock = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(1569280748)); };
    return o;
  }

  // Verifies `signature_b64` over `string_to_sign` with openssl, RSASSA-PSS
  // SHA-256 with MGF1 SHA-256 and the given salt length.
  bool OpensslVerifies(const std::string& string_to_sign, const std::string& signature_b64, int salt_length) {
    WriteFile(dir_ / "string_to_sign", string_to_sign);
    WriteFile(dir_ / "signature.b64", signature_b64 + "\n");
    if (Shell("openssl base64 -d -A -in " + Path("signature.b64") + " -out " + Path("signature.bin")) != 0)
      return false;
    return Shell(
               "openssl dgst -sha256 -sigopt rsa_padding_mode:pss -sigopt rsa_mgf1_md:sha256 -sigopt rsa_pss_saltlen:" +
               std::to_string(salt_length) + " -verify " + Path("public.pem") + " -signature " + Path("signature.bin") +
               " " + Path("string_to_sign")) == 0;
  }

  // The SHA-256 of `data` in hex, computed by openssl.
  std::string OpensslSha256(const std::string& data) {
    WriteFile(dir_ / "data", data);
    if (Shell("openssl dgst -sha256 -r -out " + Path("digest") + " " + Path("data")) != 0) return "";
    return ReadFile(dir_ / "digest").substr(0, 64);
  }

  fs::path dir_;
  std::string private_pem_;
};

TEST_F(AmazonPaySigningTest, TheCanonicalRequestFollowsTheDocumentedLayout) {
  const std::string expected =
      "POST\n"
      "/live/v2/checkoutSessions\n"
      "\n"
      "accept:application/json\n"
      "content-type:application/json\n"
      "x-amz-pay-date:20190923T231908Z\n"
      "x-amz-pay-host:pay-api.amazon.com\n"
      "x-amz-pay-idempotency-key:cllHyiNvS8cJ8Zas\n"
      "x-amz-pay-region:us\n"
      "\n"
      "accept;content-type;x-amz-pay-date;x-amz-pay-host;x-amz-pay-idempotency-key;x-amz-pay-region\n" +
      std::string(kEmptySha256);
  EXPECT_EQ(AmazonPayCanonicalRequest(DocumentedExample()), expected);
}

TEST_F(AmazonPaySigningTest, TheLastLineIsTheBodysHashAndTheStringToSignHashesTheCanonicalRequest) {
  ProviderRequest r = DocumentedExample();
  r.body = R"({"chargePermissionId":"S01-123","chargeAmount":{"amount":"14.00","currencyCode":"USD"}})";
  const std::string canonical = AmazonPayCanonicalRequest(r);
  EXPECT_EQ(canonical.substr(canonical.rfind('\n') + 1), OpensslSha256(r.body));
  EXPECT_EQ(AmazonPayStringToSign(AmazonPayAlgorithm::kRsassaPssV2, canonical),
            "AMZN-PAY-RSASSA-PSS-V2\n" + OpensslSha256(canonical));
  EXPECT_EQ(AmazonPayStringToSign(AmazonPayAlgorithm::kRsassaPss, canonical),
            "AMZN-PAY-RSASSA-PSS\n" + OpensslSha256(canonical));
}

TEST_F(AmazonPaySigningTest, PathSegmentsArePercentEncodedAndTheQueryIsSorted) {
  ProviderRequest r;
  r.method = "GET";
  r.path = "/v2/charges/S01 12?b=2&a=1";
  const std::string canonical = AmazonPayCanonicalRequest(r, "/sandbox");
  EXPECT_EQ(canonical.substr(0, canonical.find("\n\n")), "GET\n/sandbox/v2/charges/S01%2012\na=1&b=2");
}

TEST_F(AmazonPaySigningTest, AV2SignatureVerifiesWithSaltLength32AndNot20) {
  auto signer = NewAmazonPaySigner(Options(AmazonPayAlgorithm::kRsassaPssV2));
  ASSERT_TRUE(signer.has_value()) << signer.error().ToString();
  ProviderRequest r = DocumentedExample();
  r.headers.erase(r.headers.begin() + 2, r.headers.end());  // the signer adds host, date and accept
  r.body = R"({"chargeAmount":{"amount":"14.00","currencyCode":"USD"}})";
  ASSERT_TRUE((*signer)(&r).ok());

  EXPECT_EQ(*r.FindHeader("x-amz-pay-date"), "20190923T231908Z");
  EXPECT_EQ(*r.FindHeader("x-amz-pay-host"), "pay-api.amazon.com");
  EXPECT_EQ(*r.FindHeader("accept"), "application/json");
  const std::string authorization = *r.FindHeader("authorization");
  const std::string head =
      "AMZN-PAY-RSASSA-PSS-V2 PublicKeyId=SANDBOX-AHWZZO6U5W52OQKJXLCV3RUJ, "
      "SignedHeaders=accept;content-type;x-amz-pay-date;x-amz-pay-host;x-amz-pay-idempotency-key;x-amz-pay-region, "
      "Signature=";
  ASSERT_EQ(authorization.substr(0, head.size()), head);
  const std::string signature = authorization.substr(head.size());

  const std::string to_sign = AmazonPayStringToSign(AmazonPayAlgorithm::kRsassaPssV2, AmazonPayCanonicalRequest(r));
  EXPECT_TRUE(OpensslVerifies(to_sign, signature, 32));
  EXPECT_FALSE(OpensslVerifies(to_sign, signature, 20));
  // Any change to a signed part breaks it.
  r.body[5] = 'X';
  EXPECT_FALSE(OpensslVerifies(AmazonPayStringToSign(AmazonPayAlgorithm::kRsassaPssV2, AmazonPayCanonicalRequest(r)),
                               signature, 32));
}

TEST_F(AmazonPaySigningTest, TheOriginalAlgorithmSignsWithSaltLength20) {
  auto signer = NewAmazonPaySigner(Options(AmazonPayAlgorithm::kRsassaPss));
  ASSERT_TRUE(signer.has_value()) << signer.error().ToString();
  ProviderRequest r = DocumentedExample();
  ASSERT_TRUE((*signer)(&r).ok());
  const std::string authorization = *r.FindHeader("authorization");
  ASSERT_EQ(authorization.rfind("AMZN-PAY-RSASSA-PSS PublicKeyId=", 0), 0u) << authorization;
  const std::string signature = authorization.substr(authorization.find("Signature=") + 10);
  const std::string to_sign = AmazonPayStringToSign(AmazonPayAlgorithm::kRsassaPss, AmazonPayCanonicalRequest(r));
  EXPECT_TRUE(OpensslVerifies(to_sign, signature, 20));
  EXPECT_FALSE(OpensslVerifies(to_sign, signature, 32));
}

// The adapter configured with the key (AmazonPayOptions::signing) signs
// every request it builds, its idempotency key included, with the
// documented headers, and the signature verifies with the public key.
TEST_F(AmazonPaySigningTest, AnAdapterGivenTheKeySignsItsRequestsWithTheDocumentedHeaders) {
  AmazonPayOptions o;
  o.signing = Options(AmazonPayAlgorithm::kRsassaPssV2);
  const auto adapter = NewAmazonPayAdapter(o);
  const Result<ProviderRequest> charge =
      adapter->BuildCharge({1400, "USD", "S01-123", "", "Ride 7", "", ""}, testing::kProviderKey);
  const Result<ProviderRequest> refund = adapter->BuildRefund({"S01-123-C01", 1400, "USD", ""}, testing::kProviderKey);
  for (const Result<ProviderRequest>* r : {&charge, &refund}) {
    ASSERT_TRUE(r->has_value()) << r->error().ToString();
    const ProviderRequest& request = **r;
    EXPECT_EQ(*request.FindHeader("x-amz-pay-date"), "20190923T231908Z");
    EXPECT_EQ(*request.FindHeader("x-amz-pay-host"), "pay-api.amazon.com");
    EXPECT_EQ(*request.FindHeader("x-amz-pay-region"), "us");
    EXPECT_EQ(*request.FindHeader("accept"), "application/json");
    ASSERT_NE(request.FindHeader("authorization"), nullptr) << request.path;
    const std::string authorization = *request.FindHeader("authorization");
    const std::string head =
        "AMZN-PAY-RSASSA-PSS-V2 PublicKeyId=SANDBOX-AHWZZO6U5W52OQKJXLCV3RUJ, "
        "SignedHeaders=accept;content-type;x-amz-pay-date;x-amz-pay-host;x-amz-pay-idempotency-key;x-amz-pay-region, "
        "Signature=";
    ASSERT_EQ(authorization.substr(0, head.size()), head) << authorization;
    const std::string signature = authorization.substr(head.size());
    EXPECT_TRUE(OpensslVerifies(
        AmazonPayStringToSign(AmazonPayAlgorithm::kRsassaPssV2, AmazonPayCanonicalRequest(request)), signature, 32))
        << request.path;
  }
}

TEST_F(AmazonPaySigningTest, AnAdapterWhoseKeyCannotSignIsRefusedAtConstruction) {
  AmazonPayOptions o;
  o.signing = Options(AmazonPayAlgorithm::kRsassaPssV2);
  o.signing->private_key_pem = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  EXPECT_THROW(NewAmazonPayAdapter(o), std::invalid_argument);
  o.signing = Options(AmazonPayAlgorithm::kRsassaPssV2);
  o.sign = [](ProviderRequest*) { return Status::OK(); };
  EXPECT_THROW(NewAmazonPayAdapter(o), std::invalid_argument) << "two signers";
}

TEST_F(AmazonPaySigningTest, AKeyThatIsNotAnRsaPrivateKeyIsRefusedAtOnce) {
  AmazonPaySigningOptions o = Options(AmazonPayAlgorithm::kRsassaPssV2);
  o.private_key_pem = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n";
  EXPECT_EQ(NewAmazonPaySigner(o).error().code(), StatusCode::kInvalidArgument);
  o = Options(AmazonPayAlgorithm::kRsassaPssV2);
  o.public_key_id.clear();
  EXPECT_EQ(NewAmazonPaySigner(o).error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey::phases
