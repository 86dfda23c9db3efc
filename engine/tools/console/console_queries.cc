#include "console/console_queries.h"

#include "admin/key_filter_sql.h"
#include "pg/with_connection.h"
#include "sql/sql_catalog.h"

namespace phasekey::console {
namespace {

template <class F>
Result<nlohmann::json> Read(const std::string& url, F&& fill) {
  nlohmann::json out = nlohmann::json::array();
  Status s = pg::WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    fill(tx, out);
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace

Result<nlohmann::json> ConsoleKeysPage(const std::string& url, const KeysQuery& q) {
  if (std::string why = admin::FilterProblem(q.filter); !why.empty()) return Status::InvalidArgument(why);
  Status bad;
  auto page = Read(url, [&](pqxx::nontransaction& tx, nlohmann::json& out) {
    const std::optional<int> bucket = admin::FilterBucket(tx, q.filter, &bad);
    if (!bad.ok()) return;
    for (const auto& r : admin::ExecFiltered(tx, sql::q::ConsoleKeysPage, q.filter, bucket, q.after.bucket,
                                             q.after.account, q.after.key, q.limit)) {
      out.push_back(
          {{"bucket", r[0].as<int>()},
           {"account", r[1].as<std::string>()},
           {"id", r[2].as<std::int64_t>()},
           {"key", r[3].as<std::string>()},
           {"flow", r[4].as<std::string>()},
           {"state", r[5].as<std::string>()},
           {"recovery_point", r[6].as<std::string>()},
           {"attempts", r[7].as<int>()},
           {"age_s", r[8].as<long long>()},
           {"last_error", r[9].as<std::string>()},
           {"error_class", r[10].is_null() ? nlohmann::json(nullptr) : nlohmann::json(r[10].as<std::string>())}});
    }
  });
  if (page && !bad.ok()) return bad;
  return page;
}

Result<nlohmann::json> ConsoleAttention(const std::string& url, int limit) {
  return Read(url, [&](pqxx::nontransaction& tx, nlohmann::json& out) {
    for (const auto& r : pg::Exec(tx, sql::q::ConsoleAttention, limit)) {
      out.push_back({{"account", r[0].as<std::string>()},
                     {"key", r[1].as<std::string>()},
                     {"flow", r[2].as<std::string>()},
                     {"state", r[3].as<std::string>()},
                     {"recovery_point", r[4].as<std::string>()},
                     {"attempts", r[5].as<int>()},
                     {"age_s", r[6].as<long long>()},
                     {"last_error", r[7].as<std::string>()},
                     {"why", r[8].as<std::string>()}});
    }
  });
}

Result<nlohmann::json> ConsoleSummary(const std::string& url) {
  nlohmann::json out;
  Status s = pg::WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    pqxx::row r = pg::Exec1(tx, sql::q::ConsoleSummary);
    out = {
        {"stuck", r[0].as<long long>()},
        {"dead", r[1].as<long long>()},
        {"needs_operator", r[2].as<long long>()},
        {"due_redrives", r[3].as<long long>()},
        {"oldest_unfinished_age_s", r[4].is_null() ? nlohmann::json(nullptr) : nlohmann::json(r[4].as<long long>())}};
  });
  if (!s.ok()) return s;
  return out;
}

Result<nlohmann::json> ConsolePhaseCounts(const std::string& url) {
  return Read(url, [&](pqxx::nontransaction& tx, nlohmann::json& out) {
    for (const auto& r : pg::Exec(tx, sql::q::ConsolePhaseCounts)) {
      out.push_back({{"flow", r[0].as<std::string>()},
                     {"recovery_point", r[1].as<std::string>()},
                     {"state", r[2].as<std::string>()},
                     {"count", r[3].as<long long>()}});
    }
  });
}

Result<nlohmann::json> ConsoleAuditForKey(const std::string& url, const std::string& account, const std::string& key) {
  return Read(url, [&](pqxx::nontransaction& tx, nlohmann::json& out) {
    for (const auto& r : pg::Exec(tx, sql::q::ConsoleAuditForKey, account, key)) {
      out.push_back({{"at", r[0].as<std::string>()},
                     {"actor", r[1].as<std::string>()},
                     {"action", r[2].as<std::string>()},
                     {"succeeded", r[3].as<bool>()},
                     {"outcome", r[4].as<std::string>()}});
    }
  });
}

}  // namespace phasekey::console
