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

// Whether the connection string names several servers (libpq multi-host):
// a comma in a URL's authority ("h1:5432,h2:5432") or in a host= value.
bool HasSeveralHosts(std::string_view conninfo) {
  if (IsUrl(conninfo)) {
    const std::size_t start = conninfo.find("://") + 3;
    const std::size_t end = conninfo.find_first_of("/?", start);
    return conninfo.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)
               .find(',') != std::string_view::npos;
  }
  static const std::regex host_list(R"((^|\s)(host|hostaddr)\s*=\s*('[^']*,[^']*'|[^\s']*,\S*))");
  const std::string s(conninfo);
  return std::regex_search(s, host_list);
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
  std::vector<std::pair<std::string, std::string>> all = settings;
  // Several servers and no say which: the primary, never a standby.
  if (HasSeveralHosts(url)) all.emplace_back("target_session_attrs", "read-write");
  std::string out(url);
  const bool is_url = IsUrl(url);
  bool has_query = is_url && out.find('?') != std::string::npos;
  for (const auto& [key, value] : all) {
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
  static const std::regex url_password(R"((://[^:/@,]*:)[^@]*@)");
  static const std::regex query_password(R"(([?&]password=)[^&#]*)");
  static const std::regex kv_password(R"((password\s*=\s*)('[^']*'|\S+))");
  if (IsUrl(url)) {
    const std::string out = std::regex_replace(std::string(url), url_password, "$1***@");
    return std::regex_replace(out, query_password, "$1***");
  }
  return std::regex_replace(std::string(url), kv_password, "$1***");
}

}  // namespace phasekey::pg
