#include "phasekey/webhook_endpoint.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <string>
#include <vector>

#include "util/hex.h"

namespace phasekey {
namespace {

constexpr std::size_t kMacBytes = 32;  // SHA-256
constexpr std::size_t kMaxHeader = 4096;

std::string Mac(std::string_view secret, std::string_view signed_text) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signed_text.data()), signed_text.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

// 32 bytes from 64 hex digits; false on anything else (HexDecode stops at
// the first invalid pair, leaving the result short).
bool Unhex(std::string_view hex, std::string* out) {
  if (hex.size() != 2 * kMacBytes) return false;
  *out = util::HexDecode(hex);
  return out->size() == kMacBytes;
}

struct ParsedHeader {
  bool has_timestamp = false;
  std::string timestamp_text;  // exactly as sent: it is what was signed
  std::int64_t timestamp = 0;
  std::vector<std::string> v1;  // decoded MACs; malformed ones are skipped
};

// Splits "k=v,k=v"; unknown keys (v0, future schemes) are ignored.
bool ParseHeader(std::string_view header, ParsedHeader* out) {
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "t") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out->timestamp);
      if (out->has_timestamp || ec != std::errc() || end != value.data() + value.size() || value.empty()) return false;
      out->has_timestamp = true;
      out->timestamp_text = std::string(value);
    } else if (key == "v1") {
      std::string mac;
      if (Unhex(value, &mac)) out->v1.push_back(std::move(mac));
    }
  }
  return out->has_timestamp;
}

}  // namespace

std::string SignWebhook(std::string_view secret, std::string_view payload, std::int64_t timestamp) {
  const std::string t = std::to_string(timestamp);
  return "t=" + t + ",v1=" + util::HexEncode(Mac(secret, t + "." + std::string(payload)));
}

Status VerifyWebhookSignature(std::string_view header, std::string_view payload, std::string_view secret,
                              std::chrono::system_clock::time_point now, const WebhookSignatureOptions& options) {
  if (secret.empty()) return Status::FailedPrecondition("webhook secret not configured");
  ParsedHeader parsed;
  if (header.size() > kMaxHeader || !ParseHeader(header, &parsed)) {
    return Status::InvalidArgument("malformed signature header: expected t=<timestamp>,v1=<signature>");
  }
  if (parsed.v1.empty()) return Status::InvalidArgument("no v1 signature in the signature header");
  const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::int64_t tolerance = options.tolerance.count();
  if (parsed.timestamp < now_s - tolerance || parsed.timestamp > now_s + tolerance) {
    return Status::InvalidArgument("signature timestamp outside the tolerance window");
  }
  const std::string expected = Mac(secret, parsed.timestamp_text + "." + std::string(payload));
  bool match = false;
  for (const std::string& candidate : parsed.v1) {  // no early exit: time does not tell which matched
    match |= CRYPTO_memcmp(candidate.data(), expected.data(), kMacBytes) == 0;
  }
  if (!match) return Status::InvalidArgument("no signature matches the payload");
  return Status::OK();
}

}  // namespace phasekey
