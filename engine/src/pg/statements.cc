#include "pg/statements.h"

#include <cctype>
#include <string_view>

namespace phasekey::pg {
namespace {

thread_local StatementMode g_mode = StatementMode::kPrepared;

}  // namespace

StatementMode CurrentStatementMode() { return g_mode; }

ScopedStatementMode::ScopedStatementMode(StatementMode mode) : previous_(g_mode) { g_mode = mode; }

ScopedStatementMode::~ScopedStatementMode() { g_mode = previous_; }

std::string SubstituteParameters(const std::string& text, const std::vector<std::string>& literals) {
  std::string out;
  out.reserve(text.size() + 16 * literals.size());
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!quoted && c == '-' && i + 1 < text.size() && text[i + 1] == '-') {  // a comment, to its line's end
      const std::size_t end = text.find('\n', i);
      out.append(text, i, end == std::string::npos ? std::string::npos : end - i);
      if (end == std::string::npos) break;
      i = end - 1;
      continue;
    }
    if (c == '\'') quoted = !quoted;  // '' inside a literal toggles twice
    if (quoted || c != '$' || i + 1 >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      out += c;
      continue;
    }
    std::size_t j = i + 1;
    std::size_t n = 0;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) n = n * 10 + (text[j++] - '0');
    if (n == 0 || n > literals.size()) {
      throw pqxx::usage_error("parameter $" + std::to_string(n) + " has no value (" + std::to_string(literals.size()) +
                              " given)");
    }
    out += literals[n - 1];
    i = j - 1;
  }
  return out;
}

void CheckOneStatement(const std::string& text) {
  bool ended = false;  // a ';' was seen outside quotes and comments
  std::size_t i = 0;
  // Index just past the end of a token that `closing` ends, searched from
  // `from` (the text's end when unterminated: the server refuses it whole).
  const auto past = [&](std::string_view closing, std::size_t from) {
    const std::size_t at = text.find(closing, from);
    return at == std::string::npos ? text.size() : at + closing.size();
  };
  while (i < text.size()) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '-' && next == '-') {
      i = past("\n", i);
    } else if (c == '/' && next == '*') {
      i = past("*/", i + 2);
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (ended) {
      throw pqxx::usage_error("more than one statement in: " + text);
    } else if (c == ';') {
      ended = true;
      ++i;
    } else if (c == '\'' || c == '"') {
      i = past(std::string_view(&c, 1), i + 1);  // a doubled quote closes and opens again
    } else {
      ++i;
    }
  }
}

}  // namespace phasekey::pg
