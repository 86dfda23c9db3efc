// UTF-8 as PostgreSQL's UTF8 encoding counts and checks it, for limits the
// engine enforces itself (key lengths, actor names).
#ifndef PHASEKEY_SRC_UTIL_UTF8_H_
#define PHASEKEY_SRC_UTIL_UTF8_H_

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace phasekey::util {

// UTF-8 characters in `s` (bytes that do not continue a sequence), as
// PostgreSQL's char_length counts them.
inline std::size_t Utf8Characters(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// True when `s` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF), as PostgreSQL's UTF8 encoding
// requires of text.
inline bool ValidUtf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // the sequence is cut off
    if (b(i + 1) < lo || b(i + 1) > hi) return false;
    for (std::size_t k = 2; k <= n; ++k) {
      if ((b(i + k) & 0xC0) != 0x80) return false;
    }
    i += n + 1;
  }
  return true;
}

// The first `max` characters of `s` (valid UTF-8), never cutting one.
inline std::string_view Utf8Prefix(std::string_view s, std::size_t max) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == max) return s.substr(0, i);
  }
  return s;
}

}  // namespace phasekey::util

#endif  // PHASEKEY_SRC_UTIL_UTF8_H_
