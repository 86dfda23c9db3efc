#include "pg/conninfo.h"

#include <libpq-fe.h>

#include <map>
#include <optional>
#include <regex>
#include <utility>
#include <vector>

namespace phasekey::pg {

std::optional<ConnSettings> ParseConnInfo(std::string_view conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(std::string(conninfo).c_str(), &error);
  if (options == nullptr) {
    PQfreemem(error);
    return std::nullopt;
  }
  ConnSettings set;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr) set.emplace(o->keyword, o->val);
  }
  PQconninfoFree(options);
  return set;
}

namespace {

bool IsUrl(std::string_view s) { return s.starts_with("postgresql://") || s.starts_with("postgres://"); }

// Whether `settings` name several servers (libpq multi-host): a comma in the
// host or hostaddr list ("h1:5432,h2:5432" in a URL, "host=h1,h2").
bool HasSeveralHosts(const ConnSettings& settings) {
  for (const char* key : {"host", "hostaddr"}) {
    auto it = settings.find(key);
    if (it != settings.end() && it->second.find(',') != std::string::npos) return true;
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
  // What libpq cannot parse is taken to set nothing: it gets every setting,
  // and connecting reports libpq's own error about it.
  const ConnSettings given = ParseConnInfo(url).value_or(ConnSettings{});
  std::vector<std::pair<std::string, std::string>> all = settings;
  // Several servers and no say which: the primary, never a standby.
  if (HasSeveralHosts(given)) all.emplace_back("target_session_attrs", "read-write");
  std::string out(url);
  const bool is_url = IsUrl(url);
  bool has_query = is_url && out.find('?') != std::string::npos;
  for (const auto& [key, value] : all) {
    if (given.contains(key)) continue;
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
  // Nothing to hide when libpq finds no password. Otherwise the passwords are
  // masked where they stand: libpq tells what a string sets, not where.
  if (std::optional<ConnSettings> given = ParseConnInfo(url); given && !given->contains("password")) {
    return std::string(url);
  }
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
