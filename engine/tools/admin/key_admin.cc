#include "admin/key_admin.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <pqxx/pqxx>

#include "admin/key_filter_sql.h"
#include "flow/flow_masks.h"
#include "flow/masking.h"
#include "pg/statements.h"
#include "pg/with_connection.h"
#include "phasekey/runner.h"
#include "phasekey/tools/stored_responses.h"
#include "runner/key_limits.h"
#include "runner/key_store.h"
#include "seal/keyring.h"
#include "seal/row_cipher.h"
#include "seal/sealer.h"
#include "sql/sql_catalog.h"
#include "util/hex.h"
#include "util/trace_parent.h"

namespace phasekey::admin {

namespace {

nlohmann::json Text(const pqxx::field& f) {
  return f.is_null() ? nlohmann::json(nullptr) : nlohmann::json(f.as<std::string>());
}

// AdminKeyShow's columns past the ones named in ShowRow.
constexpr int kRequestBody = 8, kOutcomes = 18, kResponseHeaders = 20, kResponseBody = 21, kDataKeyId = 29,
              kErasedAt = 30, kTraceParent = 32;

// What a stored body is, never what it says: how it is stored and its size.
nlohmann::json Summary(const std::string& stored, std::size_t bytes) { return {{"stored", stored}, {"bytes", bytes}}; }

nlohmann::json BodySummary(const pqxx::row& r, int column, const char* absent) {
  if (!r[kErasedAt].is_null()) return Summary("erased", 0);
  if (r[column].is_null()) return Summary(absent, 0);
  return Summary(r[kDataKeyId].is_null() ? "plain" : "sealed", r[column].size() / 2);  // hex
}

nlohmann::json OutcomesSummary(const pqxx::row& r, const nlohmann::json& outcomes) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [point, value] : outcomes.items()) {
    if (!r[kErasedAt].is_null()) {
      out[point] = Summary("erased", 0);
    } else if (r[kDataKeyId].is_null() || !value.is_string()) {
      out[point] = Summary("plain", value.dump().size());
    } else {
      out[point] = Summary("sealed", seal::Base64Decode(value.get<std::string>()).value_or("").size());
    }
  }
  return out;
}

// The row as AdminKeyShow returns it: every field, the bodies summarized.
nlohmann::json ShowRow(const pqxx::row& r) {
  static const char* kNames[] = {"account",
                                 "idempotency_key",
                                 "id",
                                 "stable_id",
                                 "bucket",
                                 "flow",
                                 "request_method",
                                 "request_path",
                                 "request_body",
                                 "request_fingerprint",
                                 "state",
                                 "recovery_point",
                                 "owner_token",
                                 "locked_at",
                                 "lease_expires_at",
                                 "attempts",
                                 "next_attempt_at",
                                 "last_error",
                                 "outcomes",
                                 "response_status",
                                 "response_headers",
                                 "response_body",
                                 "created_at",
                                 "updated_at",
                                 "finished_at",
                                 "failures",
                                 "point_reached_at",
                                 "rearmed_at",
                                 "flow_version",
                                 "data_key_id",
                                 "erased_at",
                                 "error_class",
                                 "trace_parent"};
  static_assert(std::size(kNames) == kTraceParent + 1, "kTraceParent names the last column of AdminKeyShow");
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t i = 0; i < std::size(kNames); ++i) out[kNames[i]] = Text(r[static_cast<int>(i)]);
  out["request_body"] = BodySummary(r, kRequestBody, "dropped");
  out["response_body"] = BodySummary(r, kResponseBody, "none");
  out["outcomes"] = OutcomesSummary(r, nlohmann::json::parse(r[kOutcomes].as<std::string>()));
  if (!r[kResponseHeaders].is_null()) {
    out["response_headers"] = nlohmann::json::parse(r[kResponseHeaders].as<std::string>());
  }
  // The trace the key's first request belonged to: what its log lines carry.
  const auto trace = util::ParseTraceParent(r[kTraceParent].is_null() ? "" : r[kTraceParent].c_str());
  out["trace_id"] = trace ? nlohmann::json(trace->trace_id) : nlohmann::json(nullptr);
  return out;
}

// The flow's masked pointers, as recorded by the application's runners.
std::vector<std::string> MasksOf(pqxx::transaction_base& tx, const std::string& flow) {
  const auto masks = flow::LoadFlowMasks(tx);
  auto it = masks.find(flow);
  return it == masks.end() ? std::vector<std::string>{} : it->second;
}

// The data key `r` is sealed under, opened with `sealer`; nullopt for a row
// stored as it is. Sets *refused instead when it cannot.
std::optional<seal::Key> RowKey(pqxx::transaction_base& tx, const pqxx::row& r, seal::Sealer& sealer, Status* refused) {
  if (r[kDataKeyId].is_null()) return std::nullopt;
  if (!sealer.enabled()) {
    *refused = Status::FailedPrecondition(
        "the key's bodies are sealed and no key-encryption key was given (--kek-file or --kek-command)");
    return std::nullopt;
  }
  if (Status verified = sealer.Verify(tx); !verified.ok()) {
    *refused = verified;
    return std::nullopt;
  }
  std::optional<seal::Key> key;
  try {
    key = sealer.KeyById(tx, r[4].as<int>(), r[kDataKeyId].as<std::int64_t>());
  } catch (const pqxx::failure&) {
    throw;
  } catch (const std::exception& e) {
    *refused = Status::FailedPrecondition(e.what());
    return std::nullopt;
  }
  if (!key) *refused = Status::FailedPrecondition("the key's data key was destroyed: its bodies no longer open");
  return key;
}

// `r` with its bodies opened and masked (AdminKeyReveal), or the reason it
// cannot be.
Status RevealRow(pqxx::transaction_base& tx, const pqxx::row& r, seal::Sealer& sealer, nlohmann::json* out) {
  if (!r[kErasedAt].is_null()) {
    return Status::FailedPrecondition("the account was erased at " + r[kErasedAt].as<std::string>() +
                                      ": the key's bodies are gone");
  }
  Status refused;
  const std::optional<seal::Key> key = RowKey(tx, r, sealer, &refused);
  if (!refused.ok()) return refused;
  const std::string account = r[0].as<std::string>(), idempotency_key = r[1].as<std::string>();
  const std::vector<std::string> masks = MasksOf(tx, r[5].as<std::string>());
  const seal::RowCipher cipher(key ? &*key : nullptr, r[4].as<int>(), account, idempotency_key);
  *out = ShowRow(r);
  try {
    (*out)["request_body"] = r[kRequestBody].is_null()
                                 ? nlohmann::json(nullptr)
                                 : nlohmann::json(flow::MaskJson(
                                       cipher.OpenRequest(util::HexDecode(r[kRequestBody].as<std::string>())), masks));
    (*out)["response_body"] =
        r[kResponseBody].is_null()
            ? nlohmann::json(nullptr)
            : nlohmann::json(
                  flow::MaskJson(cipher.OpenResponse(util::HexDecode(r[kResponseBody].as<std::string>())), masks));
    nlohmann::json outcomes = cipher.OpenOutcomes(nlohmann::json::parse(r[kOutcomes].as<std::string>()));
    // Outcomes are the providers' answers: the same pointers mask them.
    for (auto& [point, value] : outcomes.items()) value = flow::MaskJsonValue(value, masks);
    (*out)["outcomes"] = std::move(outcomes);
  } catch (const std::exception& e) {
    *out = nullptr;
    return Status::FailedPrecondition(e.what());
  }
  (*out)["masked"] = masks;
  return Status::OK();
}

}  // namespace

const std::vector<std::string>& KeyStates() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (auto s : {runner::KeyState::kActive, runner::KeyState::kFinished, runner::KeyState::kDead,
                   runner::KeyState::kNeedsOperator}) {
      out.emplace_back(runner::KeyStateName(s));
    }
    return out;
  }();
  return names;
}

const std::vector<std::string>& ErrorClasses() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int c = 0; c <= static_cast<int>(runner::ErrorClass::kErased); ++c) {
      out.emplace_back(runner::ErrorClassName(static_cast<runner::ErrorClass>(c)));
    }
    return out;
  }();
  return names;
}

namespace {

std::string OneOf(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

bool Known(const std::vector<std::string>& names, const std::string& value) {
  return std::find(names.begin(), names.end(), value) != names.end();
}

}  // namespace

std::string FilterProblem(const KeyFilter& f) {
  if (f.state && !Known(KeyStates(), *f.state)) {
    return "unknown state '" + *f.state + "' (one of " + OneOf(KeyStates()) + ")";
  }
  if (f.error_class && !Known(ErrorClasses(), *f.error_class)) {
    return "unknown error class '" + *f.error_class + "' (one of " + OneOf(ErrorClasses()) + ")";
  }
  if (f.older_than.count() < 0 || (f.newer_than && f.newer_than->count() < 0)) return "an age cannot be negative";
  if (f.newer_than && *f.newer_than <= f.older_than) {
    return "newer than " + std::to_string(f.newer_than->count()) + " s and older than " +
           std::to_string(f.older_than.count()) + " s: no key can be both";
  }
  return "";
}

nlohmann::json FilterJson(const KeyFilter& f) {
  nlohmann::json out = nlohmann::json::object();
  auto put = [&](const char* name, const std::optional<std::string>& v) {
    if (v) out[name] = *v;
  };
  put("account", f.account);
  put("flow", f.flow);
  put("state", f.state);
  put("recovery_point", f.recovery_point);
  put("error_class", f.error_class);
  if (f.stuck) out["stuck_attempts"] = f.stuck_attempts;
  if (f.older_than.count() > 0) out["older_than_s"] = f.older_than.count();
  if (f.newer_than) out["newer_than_s"] = f.newer_than->count();
  return out;
}

Result<nlohmann::json> AdminKeysList(const std::string& url, const KeyFilter& f) {
  if (std::string why = FilterProblem(f); !why.empty()) return Status::InvalidArgument(why);
  nlohmann::json rows = nlohmann::json::array();
  Status bad;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    const std::optional<int> bucket = FilterBucket(tx, f, &bad);
    if (!bad.ok()) return;
    for (const auto& r : ExecFiltered(tx, sql::q::AdminKeysList, f, bucket, f.limit)) {
      rows.push_back({{"account", r[0].as<std::string>()},
                      {"key", r[1].as<std::string>()},
                      {"flow", r[2].as<std::string>()},
                      {"state", r[3].as<std::string>()},
                      {"recovery_point", r[4].as<std::string>()},
                      {"attempts", r[5].as<int>()},
                      {"leased", r[6].as<bool>()},
                      {"lease_expired", r[7].as<bool>()},
                      {"age_s", r[8].as<long long>()},
                      {"last_error", r[9].as<std::string>()},
                      {"error_class", Text(r[10])},
                      {"owner_token", Text(r[11])}});
    }
  });
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
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
    pqxx::result r = pg::Exec(tx, sql::q::AdminKeyShow, account, key, bucket);
    if (!r.empty()) out = ShowRow(r[0]);
  });
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
  if (out.is_null()) return Status::NotFound("no key '" + key + "' for account '" + account + "'");
  return out;
}

Result<nlohmann::json> AdminKeyReveal(const std::string& url, int buckets, const std::string& account,
                                      const std::string& key, seal::Sealer& sealer, const Actor& actor) {
  if (std::string why = ActorProblem(actor.name); !why.empty()) return Status::InvalidArgument(why);
  nlohmann::json out;
  Status refused;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    // The sealer's and the masks' queries run on this connection unprepared.
    pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);
    pqxx::work tx(c);
    out = nullptr;
    refused = Status::OK();
    const int bucket = BucketOf(tx, buckets, account, &refused);
    if (refused.ok()) {
      pqxx::result r = pg::Exec(tx, sql::q::AdminKeyShow, account, key, bucket);
      refused = r.empty() ? Status::NotFound("no key '" + key + "' for account '" + account + "'")
                          : RevealRow(tx, r[0], sealer, &out);
    }
    pg::Exec0(tx, sql::q::AdminAuditInsert, actor.name, "reveal", account, key, refused.ok(),
              refused.ok() ? std::string("request, response, outcomes shown") : refused.ToString());
    tx.commit();
  });
  if (!s.ok()) return s;  // the audit row was not written: nothing is shown
  if (!refused.ok()) return refused;
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
    pg::Exec0(tx, sql::q::AdminAuditInsert, actor.name, action, account, key, point.has_value(), outcome);
    tx.commit();
  });
  if (!s.ok()) return s;  // nothing of the action was kept: it commits only with its audit row
  if (!bad.ok()) return bad;
  if (!point) return refused;
  return *point;
}

}  // namespace

Result<std::string> AdminKeyRetry(const std::string& url, int buckets, const std::string& account,
                                  const std::string& key, bool verified_not_taken, const Actor& actor) {
  const Status refused =
      Status::NotFound("no dead-lettered key '" + key + "' for account '" + account + "'" +
                       (verified_not_taken ? " and none parked for an operator"
                                           : " (a key parked for an operator needs --verified-not-charged)"));
  return AuditedAction(url, buckets, account, key, actor, verified_not_taken ? "retry_verified" : "retry",
                       "back to re-drive at ", refused, [&](pqxx::work& tx, int bucket) {
                         return pg::Exec(tx, sql::q::AdminKeyRetry, account, key, bucket, verified_not_taken);
                       });
}

Result<std::string> AdminKeyRelease(const std::string& url, int buckets, const std::string& account,
                                    const std::string& key, const std::string& owner_token, const Actor& actor) {
  const Status refused = Status::NotFound("the key is no longer leased by " + owner_token + ": nothing released");
  return AuditedAction(url, buckets, account, key, actor, "release", "lease released at ", refused,
                       [&](pqxx::work& tx, int bucket) {
                         return pg::Exec(tx, sql::q::AdminKeyRelease, account, key, bucket, owner_token);
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
  for (const auto& r :
       pg::Exec(tx, sql::q::AdminSuspectedRegenerations, static_cast<double>(window.count()), limit, windows.dump())) {
    out["by_flow"][r[0].as<std::string>()] = r[5].as<long long>();
    out["recent"].push_back({{"flow", r[0].as<std::string>()},
                             {"account", r[1].as<std::string>()},
                             {"earlier_key", r[2].as<std::string>()},
                             {"later_key", r[3].as<std::string>()},
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
    for (const auto& r : pg::Exec(tx, sql::q::AdminStatsByFlow)) {
      out["by_flow"].push_back(
          {{"flow", r[0].as<std::string>()}, {"state", r[1].as<std::string>()}, {"count", r[2].as<long long>()}});
    }
    pqxx::row r = pg::Exec1(tx, sql::q::AdminStatsSummary);
    out["oldest_unfinished_created_at"] = Text(r[0]);
    out["oldest_unfinished_age_s"] = r[1].is_null() ? nlohmann::json(nullptr) : nlohmann::json(r[1].as<long long>());
    out["dead_lettered"] = r[2].as<long long>();
    out["redrive_backlog"] = r[3].as<long long>();
    out["staged_jobs"] = r[4].as<long long>();
    out["suspected_key_regeneration"] =
        SuspectedRegenerations(tx, regeneration_window, regeneration_limit, window_by_flow);
  });
  if (!s.ok()) return s;
  return out;
}

Result<nlohmann::json> AdminReapPreview(const std::string& url, std::chrono::seconds retention,
                                        std::chrono::seconds dead_retention,
                                        std::chrono::seconds needs_operator_retention) {
  nlohmann::json out;
  Status s = WithConnection(url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    pqxx::row r =
        pg::Exec1(tx, sql::q::AdminReapPreview, static_cast<double>(retention.count()),
                  static_cast<double>(dead_retention.count()), static_cast<double>(needs_operator_retention.count()));
    out = {{"would_delete", r[0].as<long long>()},      {"oldest_finished_at", Text(r[1])},
           {"kept_unfinished", r[2].as<long long>()},   {"kept_dead", r[3].as<long long>()},
           {"would_delete_dead", r[4].as<long long>()}, {"would_delete_needs_operator", r[5].as<long long>()}};
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace phasekey::admin

namespace phasekey {

Result<std::map<AccountKey, std::string>> ReadStoredResponses(const DatabaseOptions& database,
                                                              const EncryptionOptions& encryption,
                                                              const std::vector<AccountKey>& keys) {
  std::unique_ptr<seal::Sealer> sealer = std::make_unique<seal::Sealer>();
  if (encryption.enabled()) {
    auto ring = seal::LoadKeyring(encryption);
    if (!ring) return ring.error();
    sealer = std::make_unique<seal::Sealer>(std::move(*ring), encryption.data_key_cache);
  }
  std::map<AccountKey, std::string> out;
  Status refused;
  Status s = admin::WithConnection(database.url, [&](pqxx::connection& c) {
    pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);
    // Never committed: RowKey's check of the keyring may record the current
    // key's check value, which is the services' to record.
    pqxx::work tx(c);
    for (const auto& [account, key] : keys) {
      if (!refused.ok()) return;
      const int bucket = admin::BucketOf(tx, 0, account, &refused);
      pqxx::result r = pg::Exec(tx, sql::q::AdminKeyShow, account, key, bucket);
      if (r.empty() || r[0][admin::kResponseBody].is_null() || !r[0][admin::kErasedAt].is_null()) continue;
      const std::optional<seal::Key> data_key = admin::RowKey(tx, r[0], *sealer, &refused);
      if (!refused.ok()) return;
      const seal::RowCipher cipher(data_key ? &*data_key : nullptr, bucket, account, key);
      try {
        out[{account, key}] = cipher.OpenResponse(util::HexDecode(r[0][admin::kResponseBody].as<std::string>()));
      } catch (const std::runtime_error& e) {
        refused = Status::FailedPrecondition(e.what());
      }
    }
  });
  if (!s.ok()) return s;
  if (!refused.ok()) return refused;
  return out;
}

}  // namespace phasekey
