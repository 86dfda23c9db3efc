#include "fingerprint/jcs_primitives.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace phasekey::jcs {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

// Lays out a finite, non-zero double given as decimal scientific notation
// 0.d1d2...dk * 10^n as ECMA-262 Number::toString steps 6 to 10 do (same
// names: k = digits.size(), n = exponent) and appends it to `*out`.
// `digits` are the shortest round-trip digits: no leading or trailing zero.
void LayOut(bool negative, std::string_view digits, int n, std::string* out) {
  const int k = static_cast<int>(digits.size());
  char buf[64];  // longest: "-0.00000" + 17 digits, or "-d.16digitse-324"
  char* p = buf;
  if (negative) *p++ = '-';
  if (k <= n && n <= 21) {  // integer: digits then n-k zeros
    p = std::copy(digits.begin(), digits.end(), p);
    p = std::fill_n(p, n - k, '0');
  } else if (0 < n && n <= 21) {  // decimal point inside the digits
    p = std::copy_n(digits.begin(), n, p);
    *p++ = '.';
    p = std::copy(digits.begin() + n, digits.end(), p);
  } else if (-6 < n && n <= 0) {  // 0.000ddd
    *p++ = '0';
    *p++ = '.';
    p = std::fill_n(p, -n, '0');
    p = std::copy(digits.begin(), digits.end(), p);
  } else {  // d[.ddd]e(+|-)(n-1)
    *p++ = digits[0];
    if (k > 1) {
      *p++ = '.';
      p = std::copy(digits.begin() + 1, digits.end(), p);
    }
    *p++ = 'e';
    *p++ = n - 1 >= 0 ? '+' : '-';
    p = std::to_chars(p, buf + sizeof(buf), std::abs(n - 1)).ptr;
  }
  out->append(buf, static_cast<std::size_t>(p - buf));
}

}  // namespace

Result<std::string> FormatNumber(double value) {
  if (!std::isfinite(value)) {
    return Status::InvalidArgument("number out of range (NaN/Infinity)");
  }
  std::string out;
  AppendNumber(value, &out);
  return out;
}

void AppendNumber(double value, std::string* out) {
  if (value == 0) {  // both +0 and -0
    out->push_back('0');
    return;
  }
  // std::to_chars without a precision yields the fewest digits that read
  // back as `value`, choosing the one nearest to `value` when several
  // qualify, which is exactly ECMA-262's choice including its "Note 2"
  // refinement. The text is [-]d[.ddd]e(+|-)xx.
  char buf[64];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  const bool negative = text.front() == '-';
  if (negative) text.remove_prefix(1);
  const std::size_t e = text.find('e');
  char digits[24];
  std::size_t k = 0;
  for (char c : text.substr(0, e)) {
    if (c != '.') digits[k++] = c;
  }
  std::string_view exp = text.substr(e + 1);
  if (exp.front() == '+') exp.remove_prefix(1);  // from_chars rejects '+'
  int exponent = 0;
  std::from_chars(exp.data(), exp.data() + exp.size(), exponent);
  LayOut(negative, std::string_view(digits, k), exponent + 1, out);
}

bool AppendJsonNumber(std::string_view number, std::string* out) {
  const bool negative = number.front() == '-';
  // One pass over the mantissa collects up to 15 significant digits: the
  // value is 0.d1d2...dk * 10^n with d1 != 0 and dk != 0.
  char digits[15];
  std::size_t k = 0;
  std::size_t zeros = 0;  // zero digits since the last non-zero one
  bool many = false;      // more than 15 significant digits
  long seen = 0;          // mantissa digits so far
  long leading = 0;       // zero digits before the first non-zero one
  long point = -1;        // mantissa digits before the '.', once seen
  std::size_t i = negative ? 1 : 0;
  for (; i < number.size(); ++i) {
    const char c = number[i];
    if (c == '.') {
      point = seen;
      continue;
    }
    if (c == 'e' || c == 'E') break;
    ++seen;
    if (c == '0' && k == 0) {
      ++leading;
    } else if (c == '0') {
      ++zeros;
    } else if (k + zeros < sizeof(digits)) {
      for (; zeros > 0; --zeros) digits[k++] = '0';
      digits[k++] = c;
    } else {
      many = true;
    }
  }
  long exponent = 0;  // saturated: beyond +-10^9 only its sign matters
  if (i < number.size()) {
    std::string_view exp = number.substr(i + 1);
    const bool minus = exp.front() == '-';
    if (exp.front() == '-' || exp.front() == '+') exp.remove_prefix(1);
    for (char c : exp) exponent = std::min(exponent * 10 + (c - '0'), 1'000'000'000L);
    if (minus) exponent = -exponent;
  }
  if (k == 0) {  // zero, with any sign and exponent
    out->push_back('0');
    return true;
  }
  const long n = (point < 0 ? seen : point) - leading + exponent;
  if (!many && n >= -300 && n <= 300) {  // normal doubles, far from the edges
    LayOut(negative, std::string_view(digits, k), static_cast<int>(n), out);
    return true;
  }
  double value = 0;
  std::from_chars_result r = std::from_chars(number.data(), number.data() + number.size(), value);
  if (r.ec == std::errc()) {
    AppendNumber(value, out);
    return true;
  }
  // Out of range: an overflow if n > 0 (then n > 308), else the value is
  // below the smallest subnormal and rounds to zero.
  if (n > 0) return false;
  out->push_back('0');
  return true;
}

void AppendEscapedCodePoint(std::uint32_t cp, std::string* out) {
  switch (cp) {
    case '"': out->append("\\\""); return;
    case '\\': out->append("\\\\"); return;
    case '\b': out->append("\\b"); return;
    case '\t': out->append("\\t"); return;
    case '\n': out->append("\\n"); return;
    case '\f': out->append("\\f"); return;
    case '\r': out->append("\\r"); return;
    default: break;
  }
  if (cp < 0x20) {
    const char escape[] = {'\\', 'u', '0', '0', kHexDigits[cp >> 4], kHexDigits[cp & 0xF]};
    out->append(escape, sizeof(escape));
  } else {
    AppendUtf8(cp, out);
  }
}

void AppendUtf8(std::uint32_t cp, std::string* out) {
  char buf[4];
  std::size_t n;
  if (cp < 0x80) {
    buf[0] = static_cast<char>(cp);
    n = 1;
  } else if (cp < 0x800) {
    buf[0] = static_cast<char>(0xC0 | (cp >> 6));
    buf[1] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    buf[0] = static_cast<char>(0xE0 | (cp >> 12));
    buf[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[2] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    buf[0] = static_cast<char>(0xF0 | (cp >> 18));
    buf[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    buf[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    buf[3] = static_cast<char>(0x80 | (cp & 0x3F));
    n = 4;
  }
  out->append(buf, n);
}

void AppendString(std::string_view utf8, std::string* out) {
  out->push_back('"');
  std::size_t plain = 0;  // start of the bytes not yet appended
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    auto u = static_cast<unsigned char>(utf8[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
    out->append(utf8, plain, i - plain);
    AppendEscapedCodePoint(u, out);
    plain = i + 1;
  }
  out->append(utf8, plain);
  out->push_back('"');
}

int Utf8SequenceLength(std::string_view bytes) {
  const auto at = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const auto continuation = [&](std::size_t i, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return i < bytes.size() && at(i) >= lo && at(i) <= hi;
  };
  if (bytes.empty()) return 0;
  const unsigned lead = at(0);
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;  // a continuation byte, or an overlong 2-byte lead
  if (lead < 0xE0) return continuation(1) ? 2 : 0;
  if (lead < 0xF0) {
    // E0: A0..BF excludes overlong forms; ED: 80..9F excludes surrogates.
    const unsigned lo = lead == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = lead == 0xED ? 0x9F : 0xBF;
    return continuation(1, lo, hi) && continuation(2) ? 3 : 0;
  }
  if (lead > 0xF4) return 0;
  // F0: 90..BF excludes overlong forms; F4: 80..8F stops at U+10FFFF.
  const unsigned lo = lead == 0xF0 ? 0x90 : 0x80;
  const unsigned hi = lead == 0xF4 ? 0x8F : 0xBF;
  return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
}

std::size_t SkipPlainAscii(std::string_view s, std::size_t p) {
  constexpr std::uint64_t kOnes = 0x0101010101010101;
  constexpr std::uint64_t kHigh = 0x8080808080808080;
  if constexpr (std::endian::native == std::endian::little) {
    for (; p + 8 <= s.size(); p += 8) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + p, 8);
      const std::uint64_t quote = w ^ (kOnes * '"');
      const std::uint64_t backslash = w ^ (kOnes * '\\');
      // The high bit of a byte is set in `special` if the byte is below 0x20,
      // is '"' or '\\' (zero after the xor), or is >= 0x80. Borrows only
      // run toward higher bytes, so the lowest bit set is exact.
      const std::uint64_t special =
          (((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | w) & kHigh;
      if (special != 0) return p + static_cast<std::size_t>(std::countr_zero(special) / 8);
    }
  }
  for (const std::size_t n = s.size(); p < n; ++p) {
    const auto c = static_cast<unsigned char>(s[p]);
    if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) return p;
  }
  return s.size();
}

int CompareUtf16(std::string_view a, std::string_view b) {
  const std::size_t common = std::min(a.size(), b.size());
  auto [pa, pb] = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(common), b.begin());
  if (pa == a.begin() + static_cast<std::ptrdiff_t>(common)) {
    return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
  }
  // The names agree up to here, so both bytes sit at the same place in a
  // code point: both leads or both continuations (0x80..0xBF) of sequences
  // of the same length. A lead EE or EF starts U+E000..U+FFFF; F0..F4 starts
  // a supplementary code point, which UTF-16 writes as a surrogate pair
  // (0xD800..0xDBFF first) and so sorts before U+E000..U+FFFF.
  const unsigned x = static_cast<unsigned char>(*pa);
  const unsigned y = static_cast<unsigned char>(*pb);
  if (x >= 0xEE && y >= 0xEE && (x >= 0xF0) != (y >= 0xF0)) return x >= 0xF0 ? -1 : 1;
  return x < y ? -1 : 1;
}

}  // namespace phasekey::jcs
