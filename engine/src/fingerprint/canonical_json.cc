// CanonicalizeJson: parses with nlohmann/json's SAX interface and builds the
// RFC 8785 canonical text bottom-up, without building a document tree.
//
// nlohmann's SAX parser is iterative and its lexer already rejects ill-formed
// UTF-8, lone surrogate escapes and numbers that overflow a double (it
// reports them through parse_error). This handler adds what nlohmann does not
// check: duplicate member names (nlohmann would keep the last one) and the
// nesting limit, enforced before a container is opened. Nothing here
// recurses, so no input can exhaust the stack.
//
// Cost: each closed container's text is copied into its parent, so a byte is
// copied at most once per enclosing level: O(size * depth), with depth at
// most kMaxNestingDepth.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "fingerprint/jcs_primitives.h"
#include "phasekey/fingerprint.h"

namespace phasekey {
namespace {

// Longest piece of a member name quoted in an error message, in bytes.
constexpr std::size_t kMaxQuotedNameBytes = 64;

// Returns `s` cut to at most kMaxQuotedNameBytes on a code point boundary,
// with "..." appended if anything was cut. `s` must be well-formed UTF-8.
std::string Abbreviate(std::string_view s) {
  if (s.size() <= kMaxQuotedNameBytes) return std::string(s);
  std::size_t cut = kMaxQuotedNameBytes;
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
    if (c == '\\' && (inner[i + 1] == '"' || inner[i + 1] == '\\')) {
      c = inner[++i];
    }
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

// Turns an nlohmann parse error into a one-line reason. nlohmann's message
// looks like "[json.exception.parse_error.101] parse error at line 1,
// column 5: syntax error while parsing value - <reason>; last read: '<input>'".
// The quoted input may hold arbitrary bytes, so it is dropped.
std::string DescribeSyntaxError(std::size_t byte, std::string_view what) {
  const std::string at = " at byte " + std::to_string(byte);
  if (what.find("surrogate U+") != std::string_view::npos) {
    return "lone surrogate in string" + at;
  }
  if (what.find("ill-formed UTF-8") != std::string_view::npos) {
    return "invalid UTF-8" + at;
  }
  std::size_t start = what.find("syntax error");
  start = what.find("- ", start == std::string_view::npos ? 0 : start);
  std::string_view reason = start == std::string_view::npos ? what : what.substr(start + 2);
  reason = reason.substr(0, reason.find("; last read: '"));
  return "invalid JSON" + at + ": " + std::string(reason);
}

// One member of an object being parsed.
struct Member {
  std::u16string sort_key;  // the name as UTF-16 code units
  std::string name;         // the name, unescaped UTF-8
  std::string value;        // canonical text of the value; empty until parsed
};

// One array or object that has been opened and not yet closed.
struct Frame {
  bool is_object = false;
  std::string text;             // arrays: canonical text so far, from '['
  std::size_t count = 0;        // arrays: elements completed so far
  std::vector<Member> members;  // objects: members so far, in input order
};

// The nlohmann SAX handler. Each callback returns false to stop the parse
// after recording why in error_. Use once: sax_parse, then Finish.
class CanonicalizingHandler {
 public:
  explicit CanonicalizingHandler(int max_depth) : max_depth_(max_depth) {}

  bool null() { return AddValue("null"); }
  bool boolean(bool value) { return AddValue(value ? "true" : "false"); }
  // Integer-to-double conversion rounds to nearest, ties to even, which is
  // the double nearest to the integer's decimal text.
  bool number_integer(std::int64_t value) { return AddNumber(static_cast<double>(value)); }
  bool number_unsigned(std::uint64_t value) { return AddNumber(static_cast<double>(value)); }
  bool number_float(double value, const std::string& lexeme);
  bool string(std::string& value);
  bool binary(nlohmann::json::binary_t& /*value*/) {
    return Fail("binary values are not JSON");  // only from CBOR and such
  }
  bool key(std::string& name);
  bool start_object(std::size_t /*elements*/) { return Open(true); }
  bool end_object();
  bool start_array(std::size_t /*elements*/) { return Open(false); }
  bool end_array();
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error);

  // Returns the canonical text, or InvalidArgument if the parse failed.
  // `parsed` is what sax_parse returned.
  Result<std::string> Finish(bool parsed) &&;

 private:
  bool Open(bool is_object);
  bool AddNumber(double value);
  // Stores `text` as the value now being parsed: the top level, the next
  // array element or the value of the last member name read.
  bool AddValue(std::string text);
  bool Fail(std::string message);
  // JSON Pointer to the value now being parsed, or "" for the top level.
  std::string CurrentPointer() const;

  const int max_depth_;
  std::vector<Frame> stack_;  // open containers, outermost first
  std::string root_;
  std::string error_;
};

bool CanonicalizingHandler::number_float(double value, const std::string& lexeme) {
  // Re-read the number's own text with from_chars: correctly rounded and
  // locale-independent. If that fails (nlohmann swaps '.' for the locale's
  // decimal point in the lexeme, and from_chars reports underflow to zero as
  // out of range) keep nlohmann's strtod value, also correctly rounded.
  // Overflow never reaches here: nlohmann reports it as parse error 406.
  double parsed = 0;
  std::from_chars_result r = std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), parsed);
  bool whole = r.ec == std::errc() && r.ptr == lexeme.data() + lexeme.size();
  return AddNumber(whole ? parsed : value);
}

bool CanonicalizingHandler::string(std::string& value) {
  std::string text;
  jcs::AppendString(value, &text);
  return AddValue(std::move(text));
}

bool CanonicalizingHandler::key(std::string& name) {
  std::u16string sort_key = jcs::Utf16SortKey(name);
  stack_.back().members.push_back({std::move(sort_key), std::move(name), {}});
  return true;
}

bool CanonicalizingHandler::Open(bool is_object) {
  if (static_cast<int>(stack_.size()) >= max_depth_) {
    return Fail("nesting deeper than " + std::to_string(max_depth_));
  }
  Frame frame;
  frame.is_object = is_object;
  if (!is_object) frame.text = "[";
  stack_.push_back(std::move(frame));
  return true;
}

bool CanonicalizingHandler::end_array() {
  std::string text = std::move(stack_.back().text);
  stack_.pop_back();
  text += ']';
  return AddValue(std::move(text));
}

bool CanonicalizingHandler::end_object() {
  std::vector<Member> members = std::move(stack_.back().members);
  stack_.pop_back();
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.sort_key < b.sort_key; });
  std::string text = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i > 0 && members[i].sort_key == members[i - 1].sort_key) {
      std::string where = CurrentPointer();
      std::string name;
      jcs::AppendString(Abbreviate(members[i].name), &name);
      return Fail("duplicate member name " + name + " in object at " +
                  (where.empty() ? "top level" : where));
    }
    if (i > 0) text += ',';
    jcs::AppendString(members[i].name, &text);
    text += ':';
    text += members[i].value;
  }
  text += '}';
  return AddValue(std::move(text));
}

bool CanonicalizingHandler::parse_error(std::size_t position, const std::string& last_token,
                                        const nlohmann::detail::exception& error) {
  if (error.id == 406) {  // out_of_range.406: the number overflows a double
    std::string where = CurrentPointer();
    return Fail("number out of range (overflows IEEE 754 double): " + Abbreviate(last_token) +
                " at " + (where.empty() ? "top level" : where));
  }
  return Fail(DescribeSyntaxError(position, error.what()));
}

Result<std::string> CanonicalizingHandler::Finish(bool parsed) && {
  if (!parsed || !error_.empty()) {
    return Status::InvalidArgument(error_.empty() ? "invalid JSON" : error_);
  }
  return std::move(root_);
}

bool CanonicalizingHandler::AddNumber(double value) {
  Result<std::string> text = jcs::FormatNumber(value);
  if (!text) return Fail(text.error().message());
  return AddValue(std::move(*text));
}

bool CanonicalizingHandler::AddValue(std::string text) {
  if (stack_.empty()) {
    root_ = std::move(text);
    return true;
  }
  Frame& frame = stack_.back();
  if (frame.is_object) {
    frame.members.back().value = std::move(text);
    return true;
  }
  if (frame.count++ > 0) frame.text += ',';
  frame.text += text;
  return true;
}

bool CanonicalizingHandler::Fail(std::string message) {
  error_ = std::move(message);
  return false;
}

std::string CanonicalizingHandler::CurrentPointer() const {
  std::string pointer;
  for (const Frame& frame : stack_) {
    pointer += '/';
    if (!frame.is_object) {
      pointer += std::to_string(frame.count);
    } else if (!frame.members.empty()) {
      pointer += PointerToken(frame.members.back().name);
    }
  }
  return pointer;
}

}  // namespace

Result<std::string> CanonicalizeJson(std::string_view body, const CanonicalizeOptions& options) {
  if (options.max_nesting_depth < 1 || options.max_nesting_depth > kMaxNestingDepth) {
    return Status::InvalidArgument("CanonicalizeOptions::max_nesting_depth must be in [1, " +
                                   std::to_string(kMaxNestingDepth) + "], got " +
                                   std::to_string(options.max_nesting_depth));
  }
  CanonicalizingHandler handler(options.max_nesting_depth);
  // strict = true: anything but whitespace after the value is an error.
  bool parsed = nlohmann::json::sax_parse(body.begin(), body.end(), &handler,
                                          nlohmann::json::input_format_t::json,
                                          /*strict=*/true);
  return std::move(handler).Finish(parsed);
}

}  // namespace phasekey
