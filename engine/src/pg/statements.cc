#include "pg/statements.h"

#include <cctype>

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

}  // namespace phasekey::pg
