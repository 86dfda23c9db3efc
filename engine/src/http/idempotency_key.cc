// Idempotency-Key parsing: RFC 8941 sf-string (with ignored parameters) or a
// Stripe-style bare key. See ParseIdempotencyKey in phasekey/http.h.
#include "phasekey/http.h"

#include <cstdio>

namespace phasekey {
namespace {

bool IsOws(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimOws(std::string_view v) {
  while (!v.empty() && IsOws(v.front())) v.remove_prefix(1);
  while (!v.empty() && IsOws(v.back())) v.remove_suffix(1);
  return v;
}

std::string Hex(char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned char>(c));
  return buf;
}

Status BadByte(char c, std::size_t offset, std::string_view where) {
  std::string what = static_cast<unsigned char>(c) >= 0x80 ? "the non-ASCII byte " : "the control byte ";
  return Status::InvalidArgument("Idempotency-Key contains " + what + Hex(c) + " at offset " + std::to_string(offset) +
                                 std::string(where) + "; keys are printable ASCII");
}

// Parses the sf-string starting at v[pos] == '"' into *out and leaves pos
// just after its closing quote.
Status ParseSfString(std::string_view v, std::size_t& pos, std::string* out) {
  for (++pos; pos < v.size(); ++pos) {
    char c = v[pos];
    if (c == '"') {
      ++pos;
      return Status::OK();
    }
    if (c == '\\') {
      if (pos + 1 >= v.size()) break;
      char next = v[++pos];
      if (next != '"' && next != '\\') {
        return Status::InvalidArgument("Idempotency-Key has an invalid escape at offset " + std::to_string(pos - 1) +
                                       "; inside quotes only \\\" and \\\\ are allowed");
      }
      out->push_back(next);
      continue;
    }
    if (c < 0x20 || c > 0x7E) return BadByte(c, pos, " inside the quoted string");
    out->push_back(c);
  }
  return Status::InvalidArgument("Idempotency-Key has no closing quote");
}

bool IsLcAlpha(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return IsLcAlpha(c) || (c >= 'A' && c <= 'Z'); }

// The characters of the non-string bare items of RFC 8941: tokens (tchar,
// ':' and '/'), integers and decimals, byte sequences (':' base64 ':') and
// booleans ("?1").
bool IsBareItemChar(char c) {
  if (IsAlpha(c) || IsDigit(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
    case ':':
    case '/':
    case '=':
    case '?': return true;
    default: return false;
  }
}

// Checks that v[pos..] (what follows the closing quote) is RFC 8941
// parameters: *( ";" *SP key [ "=" bare-item ] ). Their values are ignored.
Status CheckParameters(std::string_view v, std::size_t pos) {
  while (pos < v.size()) {
    if (v[pos] != ';') {
      // Printable ASCII is quoted, anything else named by its code: the
      // message never carries a raw byte of the header.
      const char c = v[pos];
      const std::string shown = c >= 0x20 && c <= 0x7E ? "'" + std::string(1, c) + "'" : Hex(c);
      return Status::InvalidArgument("Idempotency-Key must be a single quoted string; unexpected " + shown +
                                     " at offset " + std::to_string(pos) + " after the closing quote");
    }
    ++pos;
    while (pos < v.size() && v[pos] == ' ') ++pos;
    if (pos >= v.size() || !(IsLcAlpha(v[pos]) || v[pos] == '*')) {
      return Status::InvalidArgument("Idempotency-Key has a malformed parameter name at offset " + std::to_string(pos));
    }
    while (pos < v.size() &&
           (IsLcAlpha(v[pos]) || IsDigit(v[pos]) || v[pos] == '_' || v[pos] == '-' || v[pos] == '.' || v[pos] == '*')) {
      ++pos;
    }
    if (pos >= v.size() || v[pos] != '=') continue;  // a boolean true parameter
    ++pos;
    if (pos < v.size() && v[pos] == '"') {
      std::string ignored;
      if (Status s = ParseSfString(v, pos, &ignored); !s.ok()) return s;
      continue;
    }
    std::size_t start = pos;
    while (pos < v.size() && IsBareItemChar(v[pos])) ++pos;
    if (pos == start) {
      return Status::InvalidArgument("Idempotency-Key has a malformed parameter value at offset " +
                                     std::to_string(pos));
    }
  }
  return Status::OK();
}

Status CheckBareKey(std::string_view v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    char c = v[i];
    if (c == ' ' || c == '\t') {
      return Status::InvalidArgument("Idempotency-Key contains whitespace at offset " + std::to_string(i) +
                                     "; send it as a quoted string (\"...\") to include spaces");
    }
    if (c < 0x21 || c > 0x7E) return BadByte(c, i, "");
  }
  return Status::OK();
}

}  // namespace

Result<std::string> ParseIdempotencyKey(std::string_view header_value) {
  std::string_view v = TrimOws(header_value);
  if (v.empty()) return Status::InvalidArgument("Idempotency-Key is empty");
  std::string key;
  if (v.front() == '"') {
    std::size_t pos = 0;
    if (Status s = ParseSfString(v, pos, &key); !s.ok()) return s;
    if (Status s = CheckParameters(v, pos); !s.ok()) return s;
    if (key.empty()) return Status::InvalidArgument("Idempotency-Key is an empty string");
  } else {
    if (Status s = CheckBareKey(v); !s.ok()) return s;
    key.assign(v);
  }
  if (key.size() > kMaxIdempotencyKeyLength) {
    return Status::InvalidArgument("Idempotency-Key has " + std::to_string(key.size()) + " characters; at most " +
                                   std::to_string(kMaxIdempotencyKeyLength) + " are allowed");
  }
  return key;
}

}  // namespace phasekey
