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

// The state named `s` (as KeyStateName() names it).
KeyState ParseState(std::string_view s) {
  for (KeyState state : {KeyState::kActive, KeyState::kFinished, KeyState::kDead, KeyState::kNeedsOperator}) {
    if (s == KeyStateName(state)) return state;
  }
  throw std::runtime_error("unknown key state '" + std::string(s) + "'");
}

// Where each column of phasekey.key_rows sits in a result. Looked up by
// name once per statement, not once per field: pqxx's lookup by name copies
// and lower-cases the name and scans the columns every time, which was an
// eighth of a replay's client work. A result whose shape differs from the
// one remembered (a migration changed the view under a running process) is
// looked up afresh.
struct KeyRowColumns {
  explicit KeyRowColumns(const pqxx::result& r)
      : count(r.columns()),
        id(r.column_number("id")),
        stable_id(r.column_number("stable_id")),
        flow(r.column_number("flow")),
        method(r.column_number("request_method")),
        path(r.column_number("request_path")),
        fingerprint(r.column_number("fingerprint")),
        state(r.column_number("state")),
        recovery_point(r.column_number("recovery_point")),
        owner_token(r.column_number("owner_token")),
        leased(r.column_number("leased")),
        retry_after_s(r.column_number("retry_after_s")),
        attempts(r.column_number("attempts")),
        failures(r.column_number("failures")),
        response_status(r.column_number("response_status")),
        response_headers(r.column_number("response_headers")),
        response_body(r.column_number("response_body")),
        outcomes(r.column_number("outcomes")),
        request_body(r.column_number("request_body")),
        age_s(r.column_number("age_s")),
        point_age_s(r.column_number("point_age_s")),
        last_error(r.column_number("last_error")) {}

  bool Fits(const pqxx::result& r) const {
    return r.columns() == count && std::string_view(r.column_name(last_error)) == "last_error" &&
           std::string_view(r.column_name(id)) == "id";
  }

  pqxx::row::size_type count, id, stable_id, flow, method, path, fingerprint, state, recovery_point, owner_token,
      leased, retry_after_s, attempts, failures, response_status, response_headers, response_body, outcomes,
      request_body, age_s, point_age_s, last_error;
};

// The claim's results and KeyGet's have different shapes (the claim's starts
// with `inserted`); each caller keeps its own.
template <int kShape>
KeyRowColumns ColumnsOf(const pqxx::result& r) {
  static const KeyRowColumns remembered(r);
  return remembered.Fits(r) ? remembered : KeyRowColumns(r);
}

nlohmann::json ParseOutcomes(const pqxx::field& f) {
  const std::string_view text(f.c_str(), f.size());
  if (text == "{}") return nlohmann::json::object();  // most keys: no foreign phase has answered yet
  return nlohmann::json::parse(text);
}

template <int kShape>
std::optional<ExistingRow> ParseExisting(const pqxx::result& r) {
  if (r.empty()) return std::nullopt;
  const KeyRowColumns c = ColumnsOf<kShape>(r);
  const pqxx::row& f = r[0];
  ExistingRow row;
  row.id = f[c.id].as<std::int64_t>();
  row.stable_id = f[c.stable_id].as<std::string>();
  row.flow = f[c.flow].as<std::string>();
  row.method = f[c.method].as<std::string>();
  row.path = f[c.path].as<std::string>();
  row.fingerprint_hex = f[c.fingerprint].as<std::string>();
  row.state = ParseState(f[c.state].c_str());
  row.recovery_point = f[c.recovery_point].as<std::string>();
  if (!f[c.owner_token].is_null()) row.owner_token = f[c.owner_token].as<std::string>();
  row.leased = f[c.leased].as<bool>();
  row.retry_after_s = f[c.retry_after_s].is_null() ? 1 : f[c.retry_after_s].as<int>();
  row.attempts = f[c.attempts].as<int>();
  row.failures = f[c.failures].as<int>();
  if (!f[c.response_status].is_null()) {
    row.response = ResponseFromRow(f[c.response_status].as<int>(), f[c.response_headers].as<std::string>(),
                                   f[c.response_body].as<std::string>());
  }
  row.outcomes = ParseOutcomes(f[c.outcomes]);
  row.canonical_body = f[c.request_body].as<std::string>();
  row.age_s = f[c.age_s].as<std::int64_t>();
  row.point_age_s = f[c.point_age_s].as<std::int64_t>();
  row.last_error = f[c.last_error].as<std::string>();
  return row;
}

constexpr int kClaimShape = 0;  // `inserted`, then the view's columns
constexpr int kGetShape = 1;    // the view's columns

// One transaction of the pool, its statements the named queries.
class PgKeyTx final : public KeyTx {
 public:
  explicit PgKeyTx(pg::Tx& tx) : tx_(tx) {}

  ClaimOutcome KeyClaim(const ClaimParams& p) override {
    pqxx::result r =
        p.must_exist
            ? tx_.ExecFirst(pg::ExecuteText(tx_, "KeyClaimExisting", p.account, p.idempotency_key, p.bucket))
        : p.defer_insert
            ? tx_.ExecFirst(pg::ExecuteText(tx_, "KeyClaimDeferred", p.account, p.idempotency_key, p.bucket))
            : tx_.ExecFirst(pg::ExecuteText(tx_, "KeyClaim", p.account, p.idempotency_key, p.bucket, p.flow,
                                            p.method, p.path, p.canonical_body, p.fingerprint_hex, p.owner_token,
                                            static_cast<long long>(p.lease.count()), p.flow_version));
    ClaimOutcome out;
    if (r.empty()) return out;
    const pqxx::row& f = r[0];
    if (f[0].is_null()) {  // `inserted`, the claim's first column
      out.busy = true;
      return out;
    }
    if (!f[0].as<bool>()) {
      out.existing = ParseExisting<kClaimShape>(r);
      return out;
    }
    const KeyRowColumns c = ColumnsOf<kClaimShape>(r);
    ClaimedRow row;
    row.id = f[c.id].as<std::int64_t>();
    row.stable_id = f[c.stable_id].as<std::string>();
    row.attempts = f[c.attempts].as<int>();
    row.outcomes = ParseOutcomes(f[c.outcomes]);
    row.age_s = 0;
    if (p.defer_insert) deferred_ = Deferred{p, row.id, row.stable_id};
    out.claimed = std::move(row);
    return out;
  }

  std::optional<ExistingRow> KeyGet(int bucket, const std::string& account, const std::string& key) override {
    return ParseExisting<kGetShape>(pg::Exec(tx_, "KeyGet", account, key, bucket));
  }

  std::optional<ExistingRow> KeyGetForUpdate(int bucket, const std::string& account,
                                             const std::string& key) override {
    return ParseExisting<kGetShape>(pg::Exec(tx_, "KeyGetForUpdate", account, key, bucket));
  }

  std::optional<int> KeyTakeOver(int bucket, const std::string& account, const std::string& key,
                                 const std::string& owner_token, std::chrono::milliseconds lease) override {
    pqxx::result r =
        pg::Exec(tx_, "KeyTakeOver", account, key, owner_token, static_cast<long long>(lease.count()), bucket);
    if (r.empty()) return std::nullopt;
    return r[0]["attempts"].as<int>();
  }

  void KeyMove(const Fence& f, const std::string& next, const nlohmann::json& outcomes,
               std::chrono::milliseconds lease) override {
    if (const auto d = TakeDeferred(f)) {
      const ClaimParams& p = d->claim;
      tx_.ExecWithCommit(pg::ExecuteText(tx_, "KeyClaimMoved", d->id, d->stable_id, p.account, p.idempotency_key,
                                         p.bucket, p.flow, p.method, p.path, p.canonical_body, p.fingerprint_hex,
                                         next, outcomes.dump(), p.owner_token,
                                         static_cast<long long>(lease.count()), p.flow_version));
      return;
    }
    tx_.ExecWithCommit(pg::ExecuteText(tx_, "KeyMove", f.account, f.key, f.owner_token, f.point, next,
                                       outcomes.dump(), static_cast<long long>(lease.count()), f.bucket));
  }

  void KeyFinish(const Fence& f, const nlohmann::json& outcomes, const Response& response,
                 const std::optional<std::string>& last_error) override {
    if (const auto d = TakeDeferred(f)) {
      const ClaimParams& p = d->claim;
      tx_.ExecWithCommit(pg::ExecuteText(tx_, "KeyClaimFinished", d->id, d->stable_id, p.account,
                                         p.idempotency_key, p.bucket, p.flow, p.method, p.path, p.canonical_body,
                                         p.fingerprint_hex, outcomes.dump(), response.status,
                                         HeadersToJson(response).dump(), HexEncode(response.body), last_error,
                                         p.flow_version));
      return;
    }
    tx_.ExecWithCommit(pg::ExecuteText(tx_, "KeyFinish", f.account, f.key, f.owner_token, f.point, outcomes.dump(),
                                       response.status, HeadersToJson(response).dump(), HexEncode(response.body),
                                       last_error, f.bucket));
  }

  bool KeyRelease(const Fence& f, const Leftover& left, const std::string& last_error,
                  std::chrono::milliseconds retry_in, bool unclassified) override {
    return Matched(pg::Exec(tx_, "KeyRelease", f.account, f.key, f.owner_token, f.point, last_error,
                                     static_cast<long long>(retry_in.count()), f.bucket, left.point,
                                     left.outcomes.dump(), unclassified));
  }

  bool KeyStop(const Fence& f, const Leftover& left, KeyState state, const std::string& why) override {
    return Matched(pg::Exec(tx_, "KeyStop", f.account, f.key, f.owner_token, f.point, KeyStateName(state),
                                     left.point, left.outcomes.dump(), why, f.bucket));
  }

  bool KeyRenewLease(const Fence& f, std::chrono::milliseconds lease) override {
    return Matched(pg::Exec(tx_, "KeyRenewLease", f.account, f.key, f.owner_token, f.point,
                                     static_cast<long long>(lease.count()), f.bucket));
  }

  void KeyNotifyRedrive(int bucket, std::chrono::milliseconds due_in) override {
    pg::Exec(tx_, "KeyNotifyRedrive", std::to_string(bucket) + " " + std::to_string(due_in.count()));
  }

  bool begin_pending() const override { return tx_.begin_pending(); }
  void EndWithoutWaiting() override { tx_.EndWithoutWaiting(); }
  pqxx::transaction_base* phase_tx() override { return &tx_; }
  void BeginPhase() override { tx_.GuardPhase(true); }
  bool EndPhase() override {
    tx_.GuardPhase(false);
    return tx_.phase_ended_it();
  }

  // A deferred claim this transaction has not written yet: committing now
  // would keep the first phase's work without its key.
  bool claim_unwritten() const { return deferred_.has_value(); }

 private:
  // A deferred claim (ClaimParams::defer_insert) until its row is written.
  struct Deferred {
    ClaimParams claim;
    std::int64_t id = 0;
    std::string stable_id;
  };

  // The deferred claim `f` fences, once (nullopt: the row exists already).
  std::optional<Deferred> TakeDeferred(const Fence& f) {
    if (!deferred_ || deferred_->id != f.id) return std::nullopt;
    std::optional<Deferred> d = std::move(deferred_);
    deferred_.reset();
    return d;
  }

  pg::Tx& tx_;
  std::optional<Deferred> deferred_;
};

class PgKeyStore final : public KeyStore {
 public:
  explicit PgKeyStore(std::unique_ptr<pg::Pool> pool) : pool_(std::move(pool)) {}

  Status Transact(const std::function<void(KeyTx&)>& fn, pg::Tx::Start start) override {
    return pool_->Transact(
        [&](pg::Tx& tx) {
          PgKeyTx keys(tx);
          fn(keys);
          if (keys.claim_unwritten()) {
            throw std::logic_error("a deferred claim's transaction ended without KeyMove or KeyFinish");
          }
        },
        start);
  }

 private:
  const std::unique_ptr<pg::Pool> pool_;
};

}  // namespace

std::unique_ptr<KeyStore> NewPgKeyStore(std::unique_ptr<pg::Pool> pool) {
  return std::make_unique<PgKeyStore>(std::move(pool));
}

}  // namespace phasekey::runner
