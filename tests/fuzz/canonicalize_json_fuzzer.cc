// Fuzzes phasekey::CanonicalizeJson (phasekey/fingerprint.h) with arbitrary
// bytes. Beyond "no crash, no leak, no undefined behaviour" it checks the
// canonicalizer's own promises on every accepted input:
//   - the canonical form is a fixed point: canonicalizing it again gives it
//     back byte for byte (so a stored fingerprint always matches a retry);
//   - the fingerprint is the SHA-256 of that form (64 lowercase hex digits);
//   - a refusal is InvalidArgument with a one-line message;
//   - it agrees with nlohmann::json::accept, an independent parser, on what
//     is JSON: whatever it accepts nlohmann accepts, and whatever it refuses
//     for a reason other than the two I-JSON rules nlohmann does not check
//     (duplicate member names, the nesting limit) nlohmann refuses too.
// The first byte, when the input starts with 0x01, picks a smaller nesting
// limit so the depth check is exercised at every level.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "phasekey/fingerprint.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  phasekey::CanonicalizeOptions options;
  if (size >= 2 && data[0] == 0x01) {
    options.max_nesting_depth = 1 + data[1] % phasekey::kMaxNestingDepth;
    input.remove_prefix(2);
  }
  auto canonical = phasekey::CanonicalizeJson(input, options);
  // nlohmann's lexer takes a NUL byte for the end of the input, so it would
  // accept "[1]\0x"; no JSON text holds a raw NUL byte.
  const bool json = input.find('\0') == std::string_view::npos && nlohmann::json::accept(input);
  if (!canonical) {
    const std::string& message = canonical.error().message();
    Check(canonical.error().code() == phasekey::StatusCode::kInvalidArgument);
    Check(message.find('\n') == std::string::npos);
    Check(!json || message.starts_with("duplicate member name") || message.starts_with("nesting deeper"));
    return 0;
  }
  Check(json);
  auto again = phasekey::CanonicalizeJson(*canonical, options);
  Check(again.has_value() && *again == *canonical);
  auto fp = phasekey::FingerprintJson(input, options);
  Check(fp.has_value() && fp->canonical == *canonical && fp->sha256_hex.size() == 64);
  for (char c : fp->sha256_hex) Check((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  return 0;
}
