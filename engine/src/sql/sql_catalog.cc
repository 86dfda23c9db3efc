#include "sql/sql_catalog.h"

#include <cstdio>
#include <cstdlib>
#include <set>

namespace phasekey::sql {

extern const SqlFile kEngineQueryFiles[];
extern const std::size_t kEngineQueryFiles_count;

namespace {

constexpr std::string_view kHeader = "-- name:";
constexpr std::string_view kSimple = "-- protocol: simple";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// True when `line` is blank or a plain SQL comment.
bool IsBlankOrComment(std::string_view line) {
  line = Trim(line);
  return line.empty() || line.starts_with("--");
}

std::vector<NamedQuery> LoadEngineQueries() {
  std::vector<NamedQuery> all;
  std::set<std::string> names;
  std::string error;
  for (std::size_t i = 0; i < kEngineQueryFiles_count; ++i) {
    std::vector<NamedQuery> file_queries;
    if (!ParseNamedQueries(kEngineQueryFiles[i], &file_queries, &error)) {
      std::fprintf(stderr, "phasekey: broken SQL catalog: %s\n", error.c_str());
      std::abort();
    }
    for (auto& q : file_queries) {
      if (!names.insert(q.name).second) {
        std::fprintf(stderr, "phasekey: broken SQL catalog: query %s defined twice\n", q.name.c_str());
        std::abort();
      }
      all.push_back(std::move(q));
    }
  }
  return all;
}

}  // namespace

bool ParseNamedQueries(const SqlFile& file, std::vector<NamedQuery>* out, std::string* error) {
  std::string_view rest = file.text;
  NamedQuery* current = nullptr;
  std::set<std::string> seen;
  while (!rest.empty()) {
    std::size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (Trim(line).starts_with(kHeader)) {
      std::string name(Trim(Trim(line).substr(kHeader.size())));
      if (name.empty() || !seen.insert(name).second) {
        *error = std::string(file.name) + ": empty or duplicate query name '" + name + "'";
        return false;
      }
      out->push_back({name, ""});
      current = &out->back();
      continue;
    }
    if (current != nullptr && current->text.empty() && Trim(line) == kSimple) {
      current->simple = true;
      continue;
    }
    if (current == nullptr) {
      if (IsBlankOrComment(line)) continue;
      *error = std::string(file.name) + ": SQL before the first '-- name:' header";
      return false;
    }
    current->text.append(line).push_back('\n');
  }
  for (auto& q : *out) {
    q.text = std::string(Trim(q.text));
    if (!q.text.empty() && q.text.back() == ';') q.text.pop_back();
    if (q.text.empty()) {
      *error = std::string(file.name) + ": query " + q.name + " is empty";
      return false;
    }
  }
  return true;
}

bool ParseMigration(const SqlFile& file, Migration* out, std::string* error) {
  std::string_view name = file.name;
  std::size_t digits = 0;
  while (digits < name.size() && name[digits] >= '0' && name[digits] <= '9') ++digits;
  if (digits == 0 || digits > 6 || digits >= name.size() || name[digits] != '_' || !name.ends_with(".sql")) {
    *error = std::string("migration file name must look like 0001_description.sql: ") + std::string(name);
    return false;
  }
  out->version = std::atoi(std::string(name.substr(0, digits)).c_str());
  out->name = std::string(name.substr(digits + 1, name.size() - digits - 1 - 4));
  out->sql = std::string(file.text);
  if (out->version < 1) {
    *error = std::string("migration version must be >= 1: ") + std::string(name);
    return false;
  }
  return true;
}

const std::vector<NamedQuery>& EngineQueries() {
  static const std::vector<NamedQuery> queries = LoadEngineQueries();
  return queries;
}

const NamedQuery& QueryAt(std::size_t index, std::string_view name) {
  const std::vector<NamedQuery>& queries = EngineQueries();
  if (index >= queries.size() || queries[index].name != name) {
    std::fprintf(stderr, "phasekey: SQL query handle %.*s (#%zu) does not match the embedded catalog\n",
                 static_cast<int>(name.size()), name.data(), index);
    std::abort();
  }
  return queries[index];
}

}  // namespace phasekey::sql
