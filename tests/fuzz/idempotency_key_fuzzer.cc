// Fuzzes phasekey::ParseIdempotencyKey (phasekey/http.h) with arbitrary
// header values, and checks its contract on every input:
//   - an accepted key has 1 to 255 characters, all printable ASCII;
//   - it survives a round trip: written as an RFC 8941 sf-string and parsed
//     again it is the same key;
//   - a refusal is InvalidArgument with a one-line message of printable
//     ASCII (it never echoes raw bytes, so it cannot forge a log line or a
//     header).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "phasekey/http.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  auto key = phasekey::ParseIdempotencyKey(value);
  if (!key) {
    Check(key.error().code() == phasekey::StatusCode::kInvalidArgument);
    Check(!key.error().message().empty() && Printable(key.error().message()));
    return 0;
  }
  Check(!key->empty() && key->size() <= phasekey::kMaxIdempotencyKeyLength && Printable(*key));
  std::string quoted = "\"";
  for (char c : *key) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  quoted += '"';
  auto again = phasekey::ParseIdempotencyKey(quoted);
  Check(again.has_value() && *again == *key);
  return 0;
}
