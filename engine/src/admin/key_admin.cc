#include "admin/key_admin.h"

#include <functional>
#include <optional>

#include <pqxx/pqxx>

#include "admin/with_connection.h"
#include "runner/hex.h"
#include "runner/key_limits.h"
#include "sql/sql_catalog.h"
#include "phasekey/runner.h"

namespace phasekey::admin {
namespace {

using sql::Query;

// The bucket of `account` under the deployment's bucket count
// (phasekey.deployment). `buckets` 0 trusts the database; another value must
// match it. Sets *error instead when it cannot.
int BucketOf(pqxx::transaction_base& tx, int buckets, const std::string& account, Status* error) {
  pqxx::result r = tx.exec(Query("DeploymentBuckets"));
  // None stored: no service has opened the database, so any key in it was
  // written by hand, with the default count.
  const int stored = r.empty() ? 16 : r[0][0].as<int>();
  if (buckets != 0 && buckets != stored) {
    *error = Status::FailedPrecondition("--buckets is " + std::to_string(buckets) + " but this database was set up with " +
                                        std::to_string(stored) + "; leave it out");
    return 0;
  }
  return AccountBucket(account, stored);
}

nlohmann::json Text(const pqxx::field& f) { return f.is_null() ? nlohmann::json(nullptr) : nlohmann::json(f.as<std::string>()); }

nlohmann::json ShowRow(const pqxx::row& r) {
  static const char* kNames[] = {"account", "idempotency_key", "id", "stable_id", "bucket", "flow", "request_method",
                                 "request_path", "request_body", "request_fingerprint", "state", "recovery_point",
                                 "owner_token", "locked_at", "lease_expires_at", "attempts", "next_attempt_at",
                                 "last_error", "outcomes", "response_status", "response_headers", "response_body",
                                 "created_at", "updated_at", "finished_at", "failures", "point_reached_at",
                                 "rearmed_at", "flow_version"};
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < std::size(kNames); ++i) out[kNames[i]] = Text(r[static_cast<int>(i)]);
  out["outcomes"] = nlohmann::json::parse(r[18].as<std::string>());
  if (!r[20].is_null()) out["response_headers"] = nlohmann::json::parse(r[20].as<std::string>());
  if (!r[21].is_null()) out["response_body"] = runner::HexDecode(r[21].as<std::string>());
  return out;
}

}  // namespace

Result<nlohmann::json> AdminKeysList(const std::string& url, const KeyFilter& f) {
  nlohmann::json rows = nlohmann::json::array();
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    for (const auto& r : tx.exec_params(Query("AdminKeysList"), f.account, f.flow, f.state, f.stuck, f.stuck_attempts,
                                        static_cast<double>(f.older_than.count()), f.limit)) {
      rows.push_back({{"account", r[0].as<std::string>()}, {"key", r[1].as<std::string>()},
                      {"flow", r[2].as<std::string>()}, {"state", r[3].as<std::string>()},
                      {"recovery_point", r[4].as<std::string>()}, {"attempts", r[5].as<int>()},
                      {"leased", r[6].as<bool>()}, {"lease_expired", r[7].as<bool>()},
                      {"age_s", r[8].as<long long>()}, {"last_error", r[9].as<std::string>()}});
    }
  });
  if (!s.ok()) return s;
  return rows;
}

Result<nlohmann::json> AdminKeyShow(const std::string& url, int buckets, const std::string& account,
                                    const std::string& key) {
  nlohmann::json out;
  Status bad;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    const int bucket = BucketOf(tx, buckets, account, &bad);
    if (!bad.ok()) return;
    pqxx::result r = tx.exec_params(Query("AdminKeyShow"), account, key, bucket);
    if (!r.empty()) out = ShowRow(r[0]);
  });
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
  if (out.is_null()) return Status::NotFound("no key '" + key + "' for account '" + account + "'");
  return out;
}

namespace {

// Runs `update` (the action: its named query, returning the recovery point
// when it matched) and writes its audit row in the same transaction; the
// outcome is `done_prefix` and the point, or `refused` when nothing matched.
// The action and its row commit together or not at all.
Result<std::string> AuditedAction(const std::string& url, int buckets, const std::string& account,
                                  const std::string& key, const Actor& actor, const std::string& action,
                                  const std::string& done_prefix, const Status& refused,
                                  const std::function<pqxx::result(pqxx::work&, int)>& update) {
  if (std::string why = ActorProblem(actor.name); !why.empty()) return Status::InvalidArgument(why);
  std::optional<std::string> point;
  Status bad;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::work tx(c);
    point.reset();
    const int bucket = BucketOf(tx, buckets, account, &bad);
    if (bad.ok()) {
      pqxx::result r = update(tx, bucket);
      if (!r.empty()) point = r[0][0].as<std::string>();
    }
    const std::string outcome = !bad.ok() ? bad.ToString() : point ? done_prefix + *point : refused.ToString();
    tx.exec_params0(Query("AdminAuditInsert"), actor.name, action, account, key, point.has_value(), outcome);
    tx.commit();
  });
  if (!s.ok()) return s;  // nothing of the action was kept: it commits only with its audit row
  if (!bad.ok()) return bad;
  if (!point) return refused;
  return *point;
}

}  // namespace

std::string ActorProblem(const std::string& name) {
  if (!runner::ValidUtf8(name)) return "the actor's name is not valid UTF-8";
  const std::size_t n = runner::Utf8Characters(name);
  if (n == 0 || n > 100) return "the actor's name must have 1 to 100 characters (has " + std::to_string(n) + ")";
  return "";
}

Result<std::string> AdminKeyRetry(const std::string& url, int buckets, const std::string& account,
                                  const std::string& key, bool verified_not_taken, const Actor& actor) {
  const Status refused = Status::NotFound(
      "no dead-lettered key '" + key + "' for account '" + account + "'" +
      (verified_not_taken ? " and none parked for an operator"
                          : " (a key parked for an operator needs --verified-not-charged)"));
  return AuditedAction(url, buckets, account, key, actor, verified_not_taken ? "retry_verified" : "retry",
                       "back to re-drive at ", refused, [&](pqxx::work& tx, int bucket) {
                         return tx.exec_params(Query("AdminKeyRetry"), account, key, bucket, verified_not_taken);
                       });
}

Result<std::string> AdminKeyRelease(const std::string& url, int buckets, const std::string& account,
                                    const std::string& key, const std::string& owner_token, const Actor& actor) {
  const Status refused = Status::NotFound("the key is no longer leased by " + owner_token + ": nothing released");
  return AuditedAction(url, buckets, account, key, actor, "release", "lease released at ", refused,
                       [&](pqxx::work& tx, int bucket) {
                         return tx.exec_params(Query("AdminKeyRelease"), account, key, bucket, owner_token);
                       });
}

namespace {

nlohmann::json SuspectedRegenerations(pqxx::transaction_base& tx, std::chrono::seconds window, int limit,
                                      const std::map<std::string, std::chrono::seconds>& window_by_flow) {
  nlohmann::json windows = nlohmann::json::object();
  for (const auto& [flow, w] : window_by_flow) windows[flow] = w.count();
  nlohmann::json out = {{"window_s", window.count()},
                        {"window_s_by_flow", windows},
                        {"by_flow", nlohmann::json::object()},
                        {"recent", nlohmann::json::array()}};
  for (const auto& r : tx.exec_params(Query("AdminSuspectedRegenerations"), static_cast<double>(window.count()),
                                      limit, windows.dump())) {
    out["by_flow"][r[0].as<std::string>()] = r[5].as<long long>();
    out["recent"].push_back({{"flow", r[0].as<std::string>()}, {"account", r[1].as<std::string>()},
                             {"earlier_key", r[2].as<std::string>()}, {"later_key", r[3].as<std::string>()},
                             {"apart_s", std::stod(r[4].as<std::string>())}});
  }
  return out;
}

}  // namespace

Result<nlohmann::json> AdminStats(const std::string& url, std::chrono::seconds regeneration_window,
                                  int regeneration_limit,
                                  const std::map<std::string, std::chrono::seconds>& window_by_flow) {
  nlohmann::json out = {{"by_flow", nlohmann::json::array()}};
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    for (const auto& r : tx.exec(Query("AdminStatsByFlow"))) {
      out["by_flow"].push_back({{"flow", r[0].as<std::string>()}, {"state", r[1].as<std::string>()},
                                {"count", r[2].as<long long>()}});
    }
    pqxx::row r = tx.exec1(Query("AdminStatsSummary"));
    out["oldest_unfinished_created_at"] = Text(r[0]);
    out["oldest_unfinished_age_s"] = r[1].is_null() ? nlohmann::json(nullptr) : nlohmann::json(r[1].as<long long>());
    out["dead_lettered"] = r[2].as<long long>();
    out["redrive_backlog"] = r[3].as<long long>();
    out["staged_jobs"] = r[4].as<long long>();
    out["suspected_key_regeneration"] = SuspectedRegenerations(tx, regeneration_window, regeneration_limit, window_by_flow);
  });
  if (!s.ok()) return s;
  return out;
}

Result<nlohmann::json> AdminReapPreview(const std::string& url, std::chrono::seconds retention) {
  nlohmann::json out;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    pqxx::row r = tx.exec_params1(Query("AdminReapPreview"), static_cast<double>(retention.count()));
    out = {{"would_delete", r[0].as<long long>()}, {"oldest_finished_at", Text(r[1])},
           {"kept_unfinished", r[2].as<long long>()}, {"kept_dead", r[3].as<long long>()}};
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace phasekey::admin
