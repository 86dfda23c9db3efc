#include "pg/conninfo.h"

#include <regex>
#include <utility>
#include <vector>

namespace phasekey::pg {
namespace {

bool IsUrl(std::string_view s) { return s.starts_with("postgresql://") || s.starts_with("postgres://"); }

bool Mentions(std::string_view conninfo, std::string_view key) {
  const std::string needle = std::string(key) + "=";
  for (std::size_t pos = conninfo.find(needle); pos != std::string_view::npos;
       pos = conninfo.find(needle, pos + 1)) {
    if (pos == 0) return true;
    const char before = conninfo[pos - 1];
    if (before == ' ' || before == '?' || before == '&') return true;
  }
  return false;
}

}  // namespace

std::string HardenConnInfo(std::string_view url, const DatabaseOptions& o) {
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"connect_timeout", std::to_string(o.connect_timeout_s)},
      {"keepalives", "1"},
      {"keepalives_idle", std::to_string(o.keepalives_idle_s)},
      {"keepalives_interval", std::to_string(o.keepalives_interval_s)},
      {"keepalives_count", std::to_string(o.keepalives_count)},
      {"tcp_user_timeout", std::to_string(o.tcp_user_timeout.count())},
  };
  std::string out(url);
  const bool is_url = IsUrl(url);
  bool has_query = is_url && out.find('?') != std::string::npos;
  for (const auto& [key, value] : settings) {
    if (Mentions(url, key)) continue;
    if (is_url) {
      out += has_query ? '&' : '?';
      has_query = true;
    } else if (!out.empty()) {
      out += ' ';
    }
    out += key + "=" + value;
  }
  return out;
}

std::string RedactConnInfo(std::string_view url) {
  static const std::regex url_password(R"((://[^:/@]+:)[^@]*@)");
  static const std::regex kv_password(R"((password\s*=\s*)('[^']*'|\S+))");
  std::string out = std::regex_replace(std::string(url), url_password, "$1***@");
  return std::regex_replace(out, kv_password, "$1***");
}

}  // namespace phasekey::pg
