// Amazon Pay API v2 request signing: the adapter signs with it when
// AmazonPayOptions::signing is set (phasekey/phases/adapters.h).
//
// The documented scheme (https://developer.amazon.com/docs/amazon-pay-api-v2/signing-requests.html):
//   CanonicalRequest = Method '\n' CanonicalURI '\n' CanonicalQueryString '\n'
//                      CanonicalHeaders '\n' SignedHeaders '\n' Hex(SHA-256(body))
//     CanonicalHeaders: every signed header as "name:value\n", names in
//     lowercase, values trimmed, sorted by name; SignedHeaders: the same
//     names joined by ';'. CanonicalURI: the path, each segment
//     percent-encoded (RFC 3986 unreserved characters kept).
//   StringToSign = Algorithm '\n' Hex(SHA-256(CanonicalRequest))
//   Signature = Base64(RSASSA-PSS(SHA-256, MGF1 SHA-256, salt length) of
//               StringToSign with the merchant's private key)
//   authorization: Algorithm " PublicKeyId=" id ", SignedHeaders=" names
//                  ", Signature=" signature
// Algorithms: AMZN-PAY-RSASSA-PSS-V2 (salt length 32, the current one) and
// AMZN-PAY-RSASSA-PSS (salt length 20, the original, still accepted).
#ifndef PHASEKEY_PHASES_AMAZON_PAY_SIGNING_H_
#define PHASEKEY_PHASES_AMAZON_PAY_SIGNING_H_

#include <chrono>
#include <functional>
#include <string>

#include "phasekey/phases/provider_adapter.h"
#include "phasekey/status.h"

namespace phasekey::phases {

// The signature algorithms Amazon Pay accepts (see the file comment).
enum class AmazonPayAlgorithm {
  kRsassaPssV2,  // "AMZN-PAY-RSASSA-PSS-V2", salt length 32
  kRsassaPss,    // "AMZN-PAY-RSASSA-PSS", salt length 20
};

// The merchant's key and the request's environment for NewAmazonPaySigner.
// public_key_id and private_key_pem are required.
struct AmazonPaySigningOptions {
  // The key's id from Seller Central (this is not the merchant id). An id
  // starting with "LIVE-" or "SANDBOX-" names its environment, so request
  // paths carry no /live or /sandbox prefix.
  std::string public_key_id;
  // The RSA private key registered under public_key_id, PEM (PKCS#1 or PKCS#8).
  std::string private_key_pem;
  // x-amz-pay-region: "us" (or "na"), "eu" or "jp".
  std::string region = "us";
  // x-amz-pay-host: the API host the request goes to.
  std::string host = "pay-api.amazon.com";
  // Prepended to ProviderRequest::path in the canonical URI when the
  // adapter's base URL has a path ("/sandbox" for
  // https://pay-api.amazon.com/sandbox); empty otherwise.
  std::string path_prefix;
  // The signature algorithm; the current one unless the key is registered
  // for the original.
  AmazonPayAlgorithm algorithm = AmazonPayAlgorithm::kRsassaPssV2;
  // The time written to x-amz-pay-date; the system clock when empty.
  std::function<std::chrono::system_clock::time_point()> clock;
};

// The canonical request of `request` over the headers it carries (and its
// Content-Type, when it has a body), as the scheme above defines it; the
// request's "authorization" header, if any, is not signed.
std::string AmazonPayCanonicalRequest(const ProviderRequest& request, const std::string& path_prefix = "");
// "<algorithm name>\n<hex SHA-256 of canonical_request>".
std::string AmazonPayStringToSign(AmazonPayAlgorithm algorithm, const std::string& canonical_request);
// The algorithm's name as the scheme writes it: "AMZN-PAY-RSASSA-PSS-V2" or
// "AMZN-PAY-RSASSA-PSS". Static storage.
const char* AmazonPayAlgorithmName(AmazonPayAlgorithm algorithm);

// The signer the Amazon Pay adapter uses (or one for AmazonPayOptions::sign,
// wrapped by your own). Each call adds to the request, unless
// present, accept (application/json), x-amz-pay-date, x-amz-pay-host and
// x-amz-pay-region, then signs every header it carries and adds
// "authorization". InvalidArgument when the key cannot be read (checked
// here, once) or a field is empty. The signer is thread-safe.
Result<std::function<Status(ProviderRequest*)>> NewAmazonPaySigner(AmazonPaySigningOptions options);

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_AMAZON_PAY_SIGNING_H_
