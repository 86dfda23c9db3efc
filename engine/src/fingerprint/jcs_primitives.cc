#include "fingerprint/jcs_primitives.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <system_error>

#include "runner/hex.h"

namespace phasekey::jcs {
namespace {

// A finite, non-zero double as decimal scientific notation: the value is
// 0.d1d2...dk * 10^n, i.e. d1.d2...dk * 10^(n-1). Same names as ECMA-262
// section 6.1.6.1.20 (Number::toString): k = digits.size(), n = exponent.
struct ShortestDecimal {
  bool negative = false;
  std::string digits;  // k >= 1 digits, no leading or trailing zero
  int n = 0;
};

// Returns the shortest round-trip digits of `value` (finite, non-zero).
// std::to_chars without a precision yields the fewest digits that read back
// as `value`, choosing the one nearest to `value` when several qualify, which
// is exactly ECMA-262's choice including its "Note 2" refinement.
ShortestDecimal ToShortestDecimal(double value) {
  char buf[64];
  std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  // buf now holds [-]d[.ddd]e(+|-)xx.
  std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
  ShortestDecimal out;
  if (text.front() == '-') {
    out.negative = true;
    text.remove_prefix(1);
  }
  std::size_t e = text.find('e');
  for (char c : text.substr(0, e)) {
    if (c != '.') out.digits.push_back(c);
  }
  std::string_view exp = text.substr(e + 1);
  if (exp.front() == '+') exp.remove_prefix(1);  // from_chars rejects '+'
  int exponent = 0;
  std::from_chars(exp.data(), exp.data() + exp.size(), exponent);
  out.n = exponent + 1;
  return out;
}

// Lays out `d` as ECMA-262 Number::toString steps 6 to 10 do.
std::string LayOut(const ShortestDecimal& d) {
  const int k = static_cast<int>(d.digits.size());
  const int n = d.n;
  std::string out = d.negative ? "-" : "";
  if (k <= n && n <= 21) {  // integer: digits then n-k zeros
    out += d.digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {  // decimal point inside the digits
    out.append(d.digits, 0, static_cast<std::size_t>(n));
    out += '.';
    out.append(d.digits, static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {  // 0.000ddd
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += d.digits;
  } else {  // d[.ddd]e(+|-)(n-1)
    out += d.digits[0];
    if (k > 1) {
      out += '.';
      out.append(d.digits, 1);
    }
    out += (n - 1 >= 0) ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

// Appends the code point starting at utf8[*i] to `*out` as UTF-16 and
// advances *i past it. Precondition: utf8 is well-formed UTF-8.
void AppendUtf16(std::string_view utf8, std::size_t* i, std::u16string* out) {
  const auto byte = [&](std::size_t at) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(utf8[at]));
  };
  std::uint32_t lead = byte(*i);
  int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  std::uint32_t cp = length == 1   ? lead
                     : length == 2 ? lead & 0x1F
                     : length == 3 ? lead & 0x0F
                                   : lead & 0x07;
  for (int j = 1; j < length; ++j) cp = (cp << 6) | (byte(*i + j) & 0x3F);
  *i += static_cast<std::size_t>(length);
  if (cp < 0x10000) {
    out->push_back(static_cast<char16_t>(cp));
  } else {
    cp -= 0x10000;
    out->push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
    out->push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
  }
}

}  // namespace

Result<std::string> FormatNumber(double value) {
  if (!std::isfinite(value)) {
    return Status::InvalidArgument("number out of range (NaN/Infinity)");
  }
  if (value == 0) return std::string("0");  // both +0 and -0
  return LayOut(ToShortestDecimal(value));
}

void AppendString(std::string_view utf8, std::string* out) {
  out->push_back('"');
  for (char c : utf8) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\r':
        *out += "\\r";
        break;
      default: {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20) {
          *out += "\\u00" + runner::HexEncode(std::string_view(&c, 1));
        } else {
          out->push_back(c);
        }
      }
    }
  }
  out->push_back('"');
}

std::u16string Utf16SortKey(std::string_view utf8) {
  std::u16string out;
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) AppendUtf16(utf8, &i, &out);
  return out;
}

}  // namespace phasekey::jcs
