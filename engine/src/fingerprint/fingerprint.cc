#include "phasekey/fingerprint.h"

#include <openssl/evp.h>

#include <string>
#include <utility>

#include "util/hex.h"

namespace phasekey {
namespace {

// Returns OpenSSL's SHA-256, fetched once for the process and never freed.
// Passing EVP_sha256() to EVP_Digest instead makes OpenSSL 3 look the
// implementation up again on every call (about a quarter of the hashing
// time for a 1 KiB body). Falls back to EVP_sha256() if the fetch fails.
const EVP_MD* Sha256() {
  static const EVP_MD* const md = [] {
    const EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return fetched != nullptr ? fetched : EVP_sha256();
  }();
  return md;
}

// Returns the SHA-256 of `data` as 64 lowercase hex digits, or Terminal if
// OpenSSL fails (which it does not for SHA-256 short of memory exhaustion).
Result<std::string> Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, Sha256(), nullptr) != 1) {
    return Status::Terminal("SHA-256 failed in OpenSSL EVP_Digest");
  }
  return util::HexEncode(std::string_view(reinterpret_cast<const char*>(digest), length));
}

}  // namespace

Result<Fingerprint> FingerprintJson(std::string_view body, const CanonicalizeOptions& options) {
  Result<std::string> canonical = CanonicalizeJson(body, options);
  if (!canonical) return canonical.error();
  Result<std::string> digest = Sha256Hex(*canonical);
  if (!digest) return digest.error();
  return Fingerprint{std::move(*canonical), std::move(*digest)};
}

Result<std::shared_ptr<const CanonicalBody>> CanonicalBody::Of(std::string_view body,
                                                               const CanonicalizeOptions& options) {
  Result<Fingerprint> fingerprint = FingerprintJson(body, options);
  if (!fingerprint) return fingerprint.error();
  return std::shared_ptr<const CanonicalBody>(new CanonicalBody(std::move(*fingerprint)));
}

const nlohmann::json& CanonicalBody::document() const {
  // The canonical text is well-formed JSON by construction: parse cannot throw.
  std::call_once(parsed_, [this] { document_ = nlohmann::json::parse(fingerprint_.canonical); });
  return document_;
}

}  // namespace phasekey
