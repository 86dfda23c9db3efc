// CanonicalizeJson: one pass over the input that validates it and writes the
// RFC 8785 canonical text straight into the result, without a document tree
// and without a string per container.
//
// Arrays are written in place. An object's members are written in input
// order, each as `"name":value`, while a slice per member (where its text
// lies in the output, and its unescaped name) is kept; when the object
// closes the slices are checked for order and, only if the input order was
// not already the canonical one, sorted and the object's text rewritten in
// that order (one copy through a scratch buffer). Duplicate names are found
// in the same step. So a byte is copied at most once per enclosing object
// that was out of order: O(size * depth) in the worst case, depth at most
// kMaxNestingDepth, and O(size) for input that is already canonical.
//
// The parser is a loop over an explicit stack: nothing recurses, so no input
// can exhaust the call stack. The nesting limit is checked before a
// container is opened.
//
// Error messages are one line. Positions are "at byte N" with N counted from
// 1 (the offending byte; the input's size + 1 for an unexpected end).
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "fingerprint/jcs_primitives.h"
#include "phasekey/fingerprint.h"

namespace phasekey {
namespace {

// Longest piece of a member name or number quoted in an error message, in
// bytes.
constexpr std::size_t kMaxQuotedBytes = 64;

// Returns `s` cut to at most kMaxQuotedBytes on a code point boundary, with
// "..." appended if anything was cut. `s` must be well-formed UTF-8.
std::string Abbreviate(std::string_view s) {
  if (s.size() <= kMaxQuotedBytes) return std::string(s);
  std::size_t cut = kMaxQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

// Returns `name` as one JSON Pointer reference token (RFC 6901: '~' -> "~0",
// '/' -> "~1"), with control characters escaped as \u00xx so that messages
// stay on one line, and long names abbreviated.
std::string PointerToken(std::string_view name) {
  std::string quoted;
  jcs::AppendString(Abbreviate(name), &quoted);
  // Drop the quotes and undo the \" and \\ escapes, which a pointer does not
  // need; control characters stay escaped.
  std::string_view inner(quoted.data() + 1, quoted.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c == '\\' && (inner[i + 1] == '"' || inner[i + 1] == '\\')) c = inner[++i];
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// One member of an object being canonicalized.
struct Member {
  std::size_t name_begin = 0;  // in Canonicalizer::names_: the unescaped name
  std::size_t name_size = 0;
  std::size_t text_begin = 0;  // in the output: the member's `"name":value`
  std::size_t text_end = 0;    // set when the value ends
};

// One array or object that has been opened and not yet closed.
struct Frame {
  bool is_object = false;
  std::size_t body_begin = 0;    // objects: output offset just after '{'
  std::size_t first_member = 0;  // index in members_ of its own or nested members' first
  std::size_t index = 0;         // arrays: index of the element being parsed
};

// Canonicalizes one input. Use once: Run, then read error() if it failed.
class Canonicalizer {
 public:
  Canonicalizer(std::string_view in, int max_depth, std::string* out) : in_(in), max_depth_(max_depth), out_(out) {}

  // Writes the canonical text of the input to *out and returns true, or
  // returns false with the reason in error(); *out is then unspecified.
  bool Run();
  std::string& error() { return error_; }

 private:
  // Parses the value at pos_. Sets *value_done to false if it opened a
  // container that now expects its first value, true otherwise.
  bool ParseValue(bool* value_done);
  bool Open(bool is_object, bool* value_done);
  // Parses `"name":` at pos_ (whitespace skipped before) and starts a member.
  bool ParseMemberName();
  // Parses the string literal at pos_ (at its '"'), appends its canonical
  // form to the output and, if `name` is set, its unescaped bytes to names_.
  bool ParseString(bool name);
  // Decodes the escape at `*p` (at its '\\'), appends it in canonical form
  // and, if `name` is set, its bytes to names_; advances *p past it.
  bool ParseEscape(std::size_t* p, bool name);
  bool ParseNumber();
  bool ParseLiteral();
  bool CloseObject();
  void SkipWhitespace();
  std::string_view NameOf(const Member& m) const { return std::string_view(names_).substr(m.name_begin, m.name_size); }
  bool SyntaxError(std::size_t at, std::string_view reason);
  bool Fail(std::string message);
  // JSON Pointer to the value now being parsed, or "top level".
  // `members_end`: one past the members of the open containers (members_
  // may still hold those of an object just closed).
  std::string Where(std::size_t members_end) const;

  const std::string_view in_;
  const int max_depth_;
  std::string* const out_;
  std::size_t pos_ = 0;
  std::vector<Frame> stack_;     // open containers, outermost first
  std::vector<Member> members_;  // members of the open objects, outermost first
  std::string names_;            // their unescaped names, back to back
  std::string scratch_;          // CloseObject's copy of an object's text
  std::string error_;
};

bool Canonicalizer::Run() {
  out_->clear();
  out_->reserve(in_.size());
  if (in_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a byte order mark
  bool value_done = false;
  for (;;) {
    SkipWhitespace();
    if (!value_done) {
      if (!ParseValue(&value_done)) return false;
      continue;
    }
    if (stack_.empty()) {
      return pos_ == in_.size() || SyntaxError(pos_, "unexpected data after the top-level value");
    }
    Frame& frame = stack_.back();
    const char c = pos_ < in_.size() ? in_[pos_] : '\0';
    if (frame.is_object) {
      members_.back().text_end = out_->size();
      if (c == '}') {
        ++pos_;
        if (!CloseObject()) return false;
      } else if (c == ',') {
        ++pos_;
        out_->push_back(',');
        if (!ParseMemberName()) return false;
        value_done = false;
      } else {
        return SyntaxError(pos_, "expected ',' or '}' after an object member");
      }
    } else if (c == ']') {
      ++pos_;
      out_->push_back(']');
      stack_.pop_back();
    } else if (c == ',') {
      ++pos_;
      out_->push_back(',');
      ++frame.index;
      value_done = false;
    } else {
      return SyntaxError(pos_, "expected ',' or ']' after an array element");
    }
  }
}

bool Canonicalizer::ParseValue(bool* value_done) {
  *value_done = true;
  if (pos_ >= in_.size()) return SyntaxError(pos_, "unexpected end of input; expected a value");
  switch (in_[pos_]) {
    case '{': return Open(true, value_done);
    case '[': return Open(false, value_done);
    case '"': return ParseString(false);
    case 't':
    case 'f':
    case 'n': return ParseLiteral();
    default:
      if (in_[pos_] == '-' || IsDigit(in_[pos_])) return ParseNumber();
      return SyntaxError(pos_, "expected a value");
  }
}

bool Canonicalizer::Open(bool is_object, bool* value_done) {
  if (static_cast<int>(stack_.size()) >= max_depth_) {
    return Fail("nesting deeper than " + std::to_string(max_depth_));
  }
  ++pos_;
  out_->push_back(is_object ? '{' : '[');
  stack_.push_back({is_object, out_->size(), members_.size(), 0});
  SkipWhitespace();
  const char close = is_object ? '}' : ']';
  if (pos_ < in_.size() && in_[pos_] == close) {  // empty: done already
    ++pos_;
    out_->push_back(close);
    stack_.pop_back();
    return true;
  }
  *value_done = false;
  return !is_object || ParseMemberName();
}

bool Canonicalizer::ParseMemberName() {
  SkipWhitespace();
  if (pos_ >= in_.size() || in_[pos_] != '"') return SyntaxError(pos_, "expected a member name");
  members_.push_back({names_.size(), 0, out_->size(), 0});
  if (!ParseString(true)) return false;
  members_.back().name_size = names_.size() - members_.back().name_begin;
  SkipWhitespace();
  if (pos_ >= in_.size() || in_[pos_] != ':') return SyntaxError(pos_, "expected ':' after a member name");
  ++pos_;
  out_->push_back(':');
  return true;
}

bool Canonicalizer::ParseString(bool name) {
  const char* s = in_.data();
  const std::size_t n = in_.size();
  std::size_t p = pos_ + 1;
  std::size_t plain = p;  // start of the bytes copied as they are
  const auto flush = [&] {
    out_->append(s + plain, p - plain);
    if (name) names_.append(s + plain, p - plain);
  };
  out_->push_back('"');
  for (;;) {
    p = jcs::SkipPlainAscii(in_, p);
    if (p >= n) return SyntaxError(n, "unexpected end of input in a string");
    const auto c = static_cast<unsigned char>(s[p]);
    if (c == '"') break;
    if (c == '\\') {
      flush();
      if (!ParseEscape(&p, name)) return false;
      plain = p;
    } else if (c < 0x20) {
      const char hex[] = "0123456789ABCDEF";
      return SyntaxError(
          p, std::string("control character U+00") + hex[c >> 4] + hex[c & 0xF] + " in a string must be escaped");
    } else {
      const int length = jcs::Utf8SequenceLength(in_.substr(p, 4));
      if (length == 0) return Fail("invalid UTF-8 at byte " + std::to_string(p + 1));
      p += static_cast<std::size_t>(length);
    }
  }
  flush();
  out_->push_back('"');
  pos_ = p + 1;
  return true;
}

bool Canonicalizer::ParseEscape(std::size_t* p, bool name) {
  const auto hex4 = [&](std::size_t at, std::uint32_t* value) {
    if (at + 4 > in_.size()) return false;
    std::from_chars_result r = std::from_chars(in_.data() + at, in_.data() + at + 4, *value, 16);
    return r.ec == std::errc() && r.ptr == in_.data() + at + 4;  // from_chars also takes '-'; ptr guards
  };
  const std::size_t at = *p;
  if (at + 1 >= in_.size()) return SyntaxError(in_.size(), "unexpected end of input in a string");
  std::uint32_t cp = 0;
  std::size_t length = 2;
  switch (in_[at + 1]) {
    case '"': cp = '"'; break;
    case '\\': cp = '\\'; break;
    case '/': cp = '/'; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u': {
      if (!hex4(at + 2, &cp)) return SyntaxError(at, "\\u must be followed by four hex digits");
      length = 6;
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail("lone surrogate in string at byte " + std::to_string(at + 1));
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        std::uint32_t low = 0;
        if (in_.substr(at + 6, 2) != "\\u" || !hex4(at + 8, &low) || low < 0xDC00 || low > 0xDFFF) {
          return Fail("lone surrogate in string at byte " + std::to_string(at + 1));
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        length = 12;
      }
      break;
    }
    default: return SyntaxError(at + 1, "invalid escape in a string");
  }
  jcs::AppendEscapedCodePoint(cp, out_);
  if (name) jcs::AppendUtf8(cp, &names_);
  *p = at + length;
  return true;
}

bool Canonicalizer::ParseNumber() {
  const char* s = in_.data();
  const std::size_t n = in_.size();
  const std::size_t start = pos_;
  std::size_t p = start;
  const auto digits = [&] {
    const std::size_t from = p;
    while (p < n && IsDigit(s[p])) ++p;
    return p - from;
  };
  if (s[p] == '-') ++p;
  if (p < n && s[p] == '0') {
    ++p;
  } else if (p >= n || !IsDigit(s[p]) || digits() == 0) {
    return SyntaxError(p, "invalid number; expected a digit");
  }
  if (p < n && s[p] == '.') {
    ++p;
    if (digits() == 0) return SyntaxError(p, "invalid number; expected a digit after '.'");
  }
  if (p < n && (s[p] == 'e' || s[p] == 'E')) {
    if (++p < n && (s[p] == '+' || s[p] == '-')) ++p;
    if (digits() == 0) return SyntaxError(p, "invalid number; expected a digit in the exponent");
  }
  pos_ = p;
  const std::string_view text = in_.substr(start, p - start);
  if (jcs::AppendJsonNumber(text, out_)) return true;
  return Fail("number out of range (overflows IEEE 754 double): " + Abbreviate(text) + " at " + Where(members_.size()));
}

bool Canonicalizer::ParseLiteral() {
  for (std::string_view literal : {"true", "false", "null"}) {
    if (in_.substr(pos_, literal.size()) == literal) {
      out_->append(literal);
      pos_ += literal.size();
      return true;
    }
  }
  return SyntaxError(pos_, "invalid literal; expected true, false or null");
}

bool Canonicalizer::CloseObject() {
  const Frame frame = stack_.back();
  stack_.pop_back();
  Member* first = members_.data() + frame.first_member;
  Member* last = members_.data() + members_.size();
  const auto less = [this](const Member& a, const Member& b) { return jcs::CompareUtf16(NameOf(a), NameOf(b)) < 0; };
  if (std::adjacent_find(first, last, [&](const Member& a, const Member& b) { return !less(a, b); }) != last) {
    std::sort(first, last, less);
    Member* dup = std::adjacent_find(first, last, [&](const Member& a, const Member& b) { return !less(a, b); });
    if (dup != last) {
      std::string name;
      jcs::AppendString(Abbreviate(NameOf(*dup)), &name);
      return Fail("duplicate member name " + name + " in object at " + Where(frame.first_member));
    }
    scratch_.assign(*out_, frame.body_begin);
    out_->resize(frame.body_begin);
    for (Member* m = first; m != last; ++m) {
      if (m != first) out_->push_back(',');
      out_->append(scratch_, m->text_begin - frame.body_begin, m->text_end - m->text_begin);
    }
  }
  out_->push_back('}');
  names_.resize(first->name_begin);  // an open object has at least one member
  members_.resize(frame.first_member);
  return true;
}

void Canonicalizer::SkipWhitespace() {
  while (pos_ < in_.size()) {
    const char c = in_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++pos_;
  }
}

bool Canonicalizer::SyntaxError(std::size_t at, std::string_view reason) {
  return Fail("invalid JSON at byte " + std::to_string(at + 1) + ": " + std::string(reason));
}

bool Canonicalizer::Fail(std::string message) {
  error_ = std::move(message);
  return false;
}

std::string Canonicalizer::Where(std::size_t members_end) const {
  std::string pointer;
  // Walk the open containers innermost first. An object's current member
  // is its newest one: the last below `members_end`, where everything at or
  // above members_end belongs to containers nested inside it.
  for (auto frame = stack_.rbegin(); frame != stack_.rend(); ++frame) {
    std::string token;
    if (!frame->is_object) {
      token = std::to_string(frame->index);
    } else if (members_end > frame->first_member) {
      token = PointerToken(NameOf(members_[members_end - 1]));
    }
    members_end = frame->first_member;
    pointer.insert(0, "/" + token);
  }
  return pointer.empty() ? "top level" : pointer;
}

}  // namespace

Result<std::string> CanonicalizeJson(std::string_view body, const CanonicalizeOptions& options) {
  if (options.max_nesting_depth < 1 || options.max_nesting_depth > kMaxNestingDepth) {
    return Status::InvalidArgument("CanonicalizeOptions::max_nesting_depth must be in [1, " +
                                   std::to_string(kMaxNestingDepth) + "], got " +
                                   std::to_string(options.max_nesting_depth));
  }
  std::string out;
  Canonicalizer canonicalizer(body, options.max_nesting_depth, &out);
  if (!canonicalizer.Run()) return Status::InvalidArgument(std::move(canonicalizer.error()));
  return out;
}

}  // namespace phasekey
