#include "pg/statements.h"
#include "runner/pg_key_store.h"

#include "pg/pool.h"
#include "pg/transaction.h"
#include "runner/hex.h"

#include <stdexcept>
#include <string_view>

namespace phasekey::runner {
namespace {

nlohmann::json HeadersToJson(const Response& r) {
  nlohmann::json h = nlohmann::json::array();
  for (const auto& [name, value] : r.headers) h.push_back({name, value});
  return h;
}

Response ResponseFromRow(int status, const std::string& headers_json, const std::string& body_hex) {
  Response r;
  r.status = status;
  for (const auto& pair : nlohmann::json::parse(headers_json)) {
    r.headers.emplace_back(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  }
  r.body = HexDecode(body_hex);
  return r;
}

bool Matched(const pqxx::result& r) { return r.size() == 1; }

KeyState ParseState(std::string_view s) {
  if (s == "active") return KeyState::kActive;
  if (s == "finished") return KeyState::kFinished;
  if (s == "dead") return KeyState::kDead;
  if (s == "needs_operator") return KeyState::kNeedsOperator;
  throw std::runtime_error("unknown key state '" + std::string(s) + "'");
}

std::optional<ExistingRow> ParseExisting(const pqxx::result& r) {
  if (r.empty()) return std::nullopt;
  const pqxx::row& f = r[0];
  ExistingRow row;
  row.id = f["id"].as<std::int64_t>();
  row.stable_id = f["stable_id"].as<std::string>();
  row.flow = f["flow"].as<std::string>();
  row.method = f["request_method"].as<std::string>();
  row.path = f["request_path"].as<std::string>();
  row.fingerprint_hex = f["fingerprint"].as<std::string>();
  row.state = ParseState(f["state"].c_str());
  row.recovery_point = f["recovery_point"].as<std::string>();
  if (!f["owner_token"].is_null()) row.owner_token = f["owner_token"].as<std::string>();
  row.leased = f["leased"].as<bool>();
  row.retry_after_s = f["retry_after_s"].is_null() ? 1 : f["retry_after_s"].as<int>();
  row.attempts = f["attempts"].as<int>();
  row.failures = f["failures"].as<int>();
  if (!f["response_status"].is_null()) {
    row.response = ResponseFromRow(f["response_status"].as<int>(), f["response_headers"].as<std::string>(),
                                   f["response_body"].as<std::string>());
  }
  row.outcomes = nlohmann::json::parse(f["outcomes"].c_str());
  row.canonical_body = f["request_body"].as<std::string>();
  row.age_s = f["age_s"].as<std::int64_t>();
  row.point_age_s = f["point_age_s"].as<std::int64_t>();
  row.last_error = f["last_error"].as<std::string>();
  return row;
}

// One transaction of the pool, its statements the named queries.
class PgKeyTx final : public KeyTx {
 public:
  explicit PgKeyTx(pg::Tx& tx) : tx_(tx) {}

  ClaimOutcome KeyClaim(const ClaimParams& p) override {
    pqxx::result r = tx_.ExecFirst(pg::ExecuteText(tx_, "KeyClaim", p.account, p.idempotency_key, p.bucket, p.flow,
                                                   p.method, p.path, p.canonical_body, p.fingerprint_hex,
                                                   p.owner_token, static_cast<long long>(p.lease.count())));
    ClaimOutcome out;
    if (r.empty()) return out;
    const pqxx::row& f = r[0];
    if (f["inserted"].is_null()) {
      out.busy = true;
      return out;
    }
    if (!f["inserted"].as<bool>()) {
      out.existing = ParseExisting(r);
      return out;
    }
    ClaimedRow row;
    row.id = f["id"].as<std::int64_t>();
    row.stable_id = f["stable_id"].as<std::string>();
    row.attempts = f["attempts"].as<int>();
    row.outcomes = nlohmann::json::parse(f["outcomes"].c_str());
    row.age_s = 0;
    out.claimed = std::move(row);
    return out;
  }

  std::optional<ExistingRow> KeyGet(int bucket, const std::string& account, const std::string& key) override {
    return ParseExisting(pg::Exec(tx_, "KeyGet", account, key, bucket));
  }

  std::optional<ExistingRow> KeyGetForUpdate(int bucket, const std::string& account,
                                             const std::string& key) override {
    return ParseExisting(pg::Exec(tx_, "KeyGetForUpdate", account, key, bucket));
  }

  std::optional<int> KeyTakeOver(int bucket, const std::string& account, std::int64_t id,
                                 const std::string& owner_token, std::chrono::milliseconds lease) override {
    pqxx::result r =
        pg::Exec(tx_, "KeyTakeOver", account, id, owner_token, static_cast<long long>(lease.count()), bucket);
    if (r.empty()) return std::nullopt;
    return r[0]["attempts"].as<int>();
  }

  void KeyMove(const Fence& f, const std::string& next, const nlohmann::json& outcomes,
               std::chrono::milliseconds lease) override {
    tx_.ExecWithCommit(pg::ExecuteText(tx_, "KeyMove", f.account, f.id, f.owner_token, f.point, next,
                                       outcomes.dump(), static_cast<long long>(lease.count()), f.bucket));
  }

  void KeyFinish(const Fence& f, const nlohmann::json& outcomes, const Response& response,
                 const std::optional<std::string>& last_error) override {
    tx_.ExecWithCommit(pg::ExecuteText(tx_, "KeyFinish", f.account, f.id, f.owner_token, f.point, outcomes.dump(),
                                       response.status, HeadersToJson(response).dump(), HexEncode(response.body),
                                       last_error, f.bucket));
  }

  bool KeyRelease(const Fence& f, const Leftover& left, const std::string& last_error,
                  std::chrono::milliseconds retry_in, bool unclassified) override {
    return Matched(pg::Exec(tx_, "KeyRelease", f.account, f.id, f.owner_token, f.point, last_error,
                                     static_cast<long long>(retry_in.count()), f.bucket, left.point,
                                     left.outcomes.dump(), unclassified));
  }

  bool KeyStop(const Fence& f, const Leftover& left, KeyState state, const std::string& why) override {
    return Matched(pg::Exec(tx_, "KeyStop", f.account, f.id, f.owner_token, f.point, KeyStateName(state),
                                     left.point, left.outcomes.dump(), why, f.bucket));
  }

  bool KeyRenewLease(const Fence& f, std::chrono::milliseconds lease) override {
    return Matched(pg::Exec(tx_, "KeyRenewLease", f.account, f.id, f.owner_token, f.point,
                                     static_cast<long long>(lease.count()), f.bucket));
  }

  void KeyNotifyRedrive(int bucket, std::chrono::milliseconds due_in) override {
    pg::Exec(tx_, "KeyNotifyRedrive", std::to_string(bucket) + " " + std::to_string(due_in.count()));
  }

  bool begin_pending() const override { return tx_.begin_pending(); }
  void EndWithoutWaiting() override { tx_.EndWithoutWaiting(); }
  pqxx::transaction_base* phase_tx() override { return &tx_; }

 private:
  pg::Tx& tx_;
};

class PgKeyStore final : public KeyStore {
 public:
  explicit PgKeyStore(std::unique_ptr<pg::Pool> pool) : pool_(std::move(pool)) {}

  Status Transact(const std::function<void(KeyTx&)>& fn, pg::Tx::Start start) override {
    return pool_->Transact(
        [&](pg::Tx& tx) {
          PgKeyTx keys(tx);
          fn(keys);
        },
        start);
  }

  std::uint64_t commits() const override { return pool_->commits(); }

 private:
  const std::unique_ptr<pg::Pool> pool_;
};

}  // namespace

std::unique_ptr<KeyStore> NewPgKeyStore(std::unique_ptr<pg::Pool> pool) {
  return std::make_unique<PgKeyStore>(std::move(pool));
}

}  // namespace phasekey::runner
