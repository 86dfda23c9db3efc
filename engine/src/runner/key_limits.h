// The key row's text limits (sql/migrations/0001; checked by the engine,
// migration 0003) and how they are counted.
#ifndef PHASEKEY_SRC_RUNNER_KEY_LIMITS_H_
#define PHASEKEY_SRC_RUNNER_KEY_LIMITS_H_

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace phasekey::runner {

// The longest idempotency key the row holds, in characters.
inline constexpr std::size_t kMaxKeyCharacters = 255;

// UTF-8 characters in `s` (bytes that do not continue a sequence), as
// PostgreSQL's char_length counts them.
inline std::size_t Utf8Characters(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_KEY_LIMITS_H_
