#include "fake_gateway/stripe_search.h"

#include <optional>

namespace fake_gateway {
namespace {

constexpr std::string_view kMetadataField = "metadata[";
constexpr char kUnsupported[] =
    "fake_gateway answers only one clause of the form metadata['KEY']:'VALUE' (single or double quotes).";

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Reads a quoted string at the start of *text ('...' or "...", backslash
// escapes the next character) and removes it from *text; nullopt if *text
// does not start with a complete one.
std::optional<std::string> TakeQuoted(std::string_view* text) {
  if (text->empty() || (text->front() != '\'' && text->front() != '"')) return std::nullopt;
  const char quote = text->front();
  std::string out;
  for (size_t i = 1; i < text->size(); ++i) {
    const char c = (*text)[i];
    if (c == quote) {
      text->remove_prefix(i + 1);
      return out;
    }
    if (c == '\\') {
      if (++i == text->size()) return std::nullopt;
      out.push_back((*text)[i]);
      continue;
    }
    out.push_back(c);
  }
  return std::nullopt;
}

// Removes `prefix` from the start of *text; false if it is not there.
bool TakePrefix(std::string_view* text, std::string_view prefix) {
  if (!text->starts_with(prefix)) return false;
  text->remove_prefix(prefix.size());
  return true;
}

}  // namespace

std::variant<MetadataClause, std::string> ParseMetadataQuery(std::string_view query) {
  std::string_view rest = Trim(query);
  if (rest.empty()) return std::string("The search query is empty.");
  if (!TakePrefix(&rest, kMetadataField)) return std::string(kUnsupported);
  std::optional<std::string> key = TakeQuoted(&rest);
  if (!key || key->empty() || !TakePrefix(&rest, "]") || !TakePrefix(&rest, ":")) {
    return std::string(kUnsupported);
  }
  std::optional<std::string> value = TakeQuoted(&rest);
  if (!value || !rest.empty()) return std::string(kUnsupported);
  return MetadataClause{std::move(*key), std::move(*value)};
}

}  // namespace fake_gateway
