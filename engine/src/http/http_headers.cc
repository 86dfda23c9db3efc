#include "phasekey/http.h"

namespace phasekey {
namespace {

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool NameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

}  // namespace

void HttpHeaders::Add(std::string name, std::string value) { fields_.emplace_back(std::move(name), std::move(value)); }

const std::string* HttpHeaders::Find(std::string_view name) const {
  for (const Field& f : fields_) {
    if (NameEquals(f.first, name)) return &f.second;
  }
  return nullptr;
}

std::size_t HttpHeaders::Count(std::string_view name) const {
  std::size_t n = 0;
  for (const Field& f : fields_) {
    if (NameEquals(f.first, name)) ++n;
  }
  return n;
}

}  // namespace phasekey
