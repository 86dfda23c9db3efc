#include "runner/pg_key_store.h"
#include "pg/statements.h"

#include "pg/pool.h"
#include "pg/transaction.h"
#include "seal/row_cipher.h"
#include "seal/sealer.h"
#include "util/hex.h"
#include "util/json_log.h"
#include "util/planted_bug.h"

#include <mutex>
#include <stdexcept>
#include <string_view>

namespace phasekey::runner {
namespace {

nlohmann::json HeadersToJson(const Response& r) {
  nlohmann::json h = nlohmann::json::array();
  for (const auto& [name, value] : r.headers) h.push_back({name, value});
  return h;
}

Response ResponseFromRow(int status, const std::string& headers_json, const std::string& body) {
  Response r;
  r.status = status;
  for (const auto& pair : nlohmann::json::parse(headers_json)) {
    r.headers.Add(pair.at(0).get<std::string>(), pair.at(1).get<std::string>());
  }
  r.body = body;
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

// Where each column of phasekey.key_rows_v2 sits in a result. Looked up by
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
        last_error(r.column_number("last_error")),
        data_key_id(r.column_number("data_key_id")),
        erased(r.column_number("erased")),
        trace_parent(r.column_number("trace_parent")) {}

  bool Fits(const pqxx::result& r) const {
    return r.columns() == count && std::string_view(r.column_name(last_error)) == "last_error" &&
           std::string_view(r.column_name(id)) == "id";
  }

  pqxx::row::size_type count, id, stable_id, flow, method, path, fingerprint, state, recovery_point, owner_token,
      leased, retry_after_s, attempts, failures, response_status, response_headers, response_body, outcomes,
      request_body, age_s, point_age_s, last_error, data_key_id, erased, trace_parent;
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

// The row as stored: bodies still sealed (request and response bodies as
// bytes, outcomes as stored); PgKeyTx::Opened opens them.
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
                                   f[c.response_body].is_null() ? "" : util::HexDecode(f[c.response_body].c_str()));
  }
  row.outcomes = ParseOutcomes(f[c.outcomes]);
  if (!f[c.request_body].is_null()) row.canonical_body = util::HexDecode(f[c.request_body].c_str());
  row.age_s = f[c.age_s].as<std::int64_t>();
  row.point_age_s = f[c.point_age_s].as<std::int64_t>();
  row.last_error = f[c.last_error].as<std::string>();
  if (!f[c.data_key_id].is_null()) row.data_key_id = f[c.data_key_id].as<std::int64_t>();
  row.erased = f[c.erased].as<bool>();
  if (!f[c.trace_parent].is_null()) row.trace_parent = f[c.trace_parent].as<std::string>();
  return row;
}

// An erased row as the runner sees it: no bodies, outcomes' values null.
void DropBodies(ExistingRow* row) {
  row->erased = true;
  row->canonical_body.clear();
  if (row->response) row->response->body.clear();
  for (auto& [point, value] : row->outcomes.items()) value = nullptr;
}

constexpr int kClaimShape = 0;  // `inserted`, then the view's columns
constexpr int kGetShape = 1;    // the view's columns

// One transaction of the pool, its statements the named queries.
class PgKeyTx final : public KeyTx {
 public:
  PgKeyTx(pg::Tx& tx, seal::Sealer& sealer) : tx_(tx), sealer_(sealer) {}

  ClaimOutcome KeyClaim(const ClaimParams& p) override {
    const std::optional<seal::DataKey> live = p.must_exist ? std::nullopt : LiveKey(p.bucket, p.account);
    pqxx::result r =
        p.must_exist
            ? tx_.ExecFirst(pg::ExecuteText(tx_, sql::q::KeyClaimExisting, p.account, p.idempotency_key, p.bucket))
        : p.defer_insert
            ? tx_.ExecFirst(
                  pg::ExecuteText(tx_, sql::q::KeyClaimDeferred, p.account, p.idempotency_key, p.bucket, IdText(live)))
            : tx_.ExecFirst(pg::ExecuteText(
                  tx_, sql::q::KeyClaim, p.account, p.idempotency_key, p.bucket, p.flow, p.method, p.path,
                  util::HexEncode(Cipher(live, p).SealRequest(p.canonical_body)), p.fingerprint_hex, p.owner_token,
                  static_cast<long long>(p.lease.count()), p.flow_version, IdText(live), p.trace_parent));
    ClaimOutcome out;
    if (r.empty()) return out;
    const pqxx::row& f = r[0];
    if (f[0].is_null()) {  // `inserted`, the claim's first column
      out.busy = true;
      return out;
    }
    if (!f[0].as<bool>()) {
      out.existing = Opened(ParseExisting<kClaimShape>(r), p.bucket, p.account, p.idempotency_key);
      return out;
    }
    const KeyRowColumns c = ColumnsOf<kClaimShape>(r);
    if (f[c.erased].as<bool>()) {  // our cached data key was destroyed: the account was erased since
      sealer_.Forget(p.account);
      throw pg::Rollback{Status::Retryable("the account's data key was erased; claiming again under a new one")};
    }
    ClaimedRow row;
    row.id = f[c.id].as<std::int64_t>();
    row.stable_id = f[c.stable_id].as<std::string>();
    row.attempts = f[c.attempts].as<int>();
    row.outcomes = ParseOutcomes(f[c.outcomes]);
    row.age_s = 0;
    row.data_key_id = live ? live->id : 0;
    if (p.defer_insert) deferred_ = Deferred{p, row.id, row.stable_id, live};
    out.claimed = std::move(row);
    return out;
  }

  std::optional<ExistingRow> KeyGet(int bucket, const std::string& account, const std::string& key) override {
    return Opened(ParseExisting<kGetShape>(pg::Exec(tx_, sql::q::KeyGet, account, key, bucket)), bucket, account, key);
  }

  std::optional<ExistingRow> KeyGetForUpdate(int bucket, const std::string& account, const std::string& key) override {
    return Opened(ParseExisting<kGetShape>(pg::Exec(tx_, sql::q::KeyGetForUpdate, account, key, bucket)), bucket,
                  account, key);
  }

  std::optional<int> KeyTakeOver(int bucket, const std::string& account, const std::string& key,
                                 const std::string& owner_token, std::chrono::milliseconds lease) override {
    pqxx::result r =
        pg::Exec(tx_, sql::q::KeyTakeOver, account, key, owner_token, static_cast<long long>(lease.count()), bucket);
    if (r.empty()) return std::nullopt;
    return r[0]["attempts"].as<int>();
  }

  void KeyMove(const Fence& f, const std::string& next, const nlohmann::json& outcomes,
               std::chrono::milliseconds lease) override {
    if (const auto d = TakeDeferred(f)) {
      const ClaimParams& p = d->claim;
      const seal::RowCipher cipher = Cipher(d->live, p);
      tx_.ExecWithCommit(
          pg::ExecuteText(tx_, sql::q::KeyClaimMoved, d->id, d->stable_id, p.account, p.idempotency_key, p.bucket,
                          p.flow, p.method, p.path, util::HexEncode(cipher.SealRequest(p.canonical_body)),
                          p.fingerprint_hex, next, cipher.SealOutcomes(outcomes).dump(), p.owner_token,
                          static_cast<long long>(lease.count()), p.flow_version, IdText(d->live), p.trace_parent));
      return;
    }
    const auto key = FenceKey(f, !outcomes.empty());
    SeizeIfPlanted(f);
    tx_.ExecWithCommit(pg::ExecuteText(tx_, sql::q::KeyMove, f.account, f.key, f.owner_token, f.point, next,
                                       Cipher(*key, f).SealOutcomes(outcomes).dump(),
                                       static_cast<long long>(lease.count()), f.bucket));
  }

  void KeyFinish(const Fence& f, const nlohmann::json& outcomes, const Response& answered,
                 const std::optional<std::string>& last_error, ErrorClass error_class) override {
    Response response = answered;
    if (PlantedBug("finish_drops_response")) response.body.clear();  // the planted bug: replays answer nothing
    std::optional<std::string> class_name;
    if (last_error) class_name = ErrorClassName(error_class);
    if (const auto d = TakeDeferred(f)) {
      const ClaimParams& p = d->claim;
      const seal::RowCipher cipher = Cipher(d->live, p);
      tx_.ExecWithCommit(pg::ExecuteText(
          tx_, sql::q::KeyClaimFinished, d->id, d->stable_id, p.account, p.idempotency_key, p.bucket, p.flow, p.method,
          p.path, p.fingerprint_hex, cipher.SealOutcomes(outcomes).dump(), response.status,
          HeadersToJson(response).dump(), util::HexEncode(cipher.SealResponse(response.body)), last_error,
          p.flow_version, IdText(d->live), class_name, p.trace_parent));
      return;
    }
    const auto key = FenceKey(f, true);
    SeizeIfPlanted(f);
    const seal::RowCipher cipher = Cipher(*key, f);
    tx_.ExecWithCommit(
        pg::ExecuteText(tx_, sql::q::KeyFinish, f.account, f.key, f.owner_token, f.point,
                        cipher.SealOutcomes(outcomes).dump(), response.status, HeadersToJson(response).dump(),
                        util::HexEncode(cipher.SealResponse(response.body)), last_error, f.bucket, class_name));
  }

  bool KeyRelease(const Fence& f, const Leftover& left, const std::string& last_error, ErrorClass error_class,
                  std::chrono::milliseconds retry_in) override {
    const auto key = FenceKey(f, !left.outcomes.empty(), /*lost_is_fence=*/false);
    if (!key) return false;
    SeizeIfPlanted(f);
    return Matched(pg::Exec(tx_, sql::q::KeyRelease, f.account, f.key, f.owner_token, f.point, last_error,
                            static_cast<long long>(retry_in.count()), f.bucket, left.point,
                            Cipher(*key, f).SealOutcomes(left.outcomes).dump(), ErrorClassName(error_class)));
  }

  bool KeyStop(const Fence& f, const Leftover& left, KeyState state, const std::string& why,
               ErrorClass error_class) override {
    const auto key = FenceKey(f, !left.outcomes.empty(), /*lost_is_fence=*/false);
    if (!key) return false;
    return Matched(pg::Exec(tx_, sql::q::KeyStop, f.account, f.key, f.owner_token, f.point, KeyStateName(state),
                            left.point, Cipher(*key, f).SealOutcomes(left.outcomes).dump(), why, f.bucket,
                            ErrorClassName(error_class)));
  }

  bool KeyRenewLease(const Fence& f, std::chrono::milliseconds lease) override {
    SeizeIfPlanted(f);
    return Matched(pg::Exec(tx_, sql::q::KeyRenewLease, f.account, f.key, f.owner_token, f.point,
                            static_cast<long long>(lease.count()), f.bucket));
  }

  void KeyNotifyRedrive(int bucket, std::chrono::milliseconds due_in) override {
    pg::Exec(tx_, sql::q::KeyNotifyRedrive, std::to_string(bucket) + " " + std::to_string(due_in.count()));
  }

  bool begin_pending() const override { return tx_.begin_pending(); }
  pqxx::transaction_base* phase_tx() override { return &tx_.work(); }

  void QueuePhaseStatement(std::string_view sql, const std::vector<std::optional<std::string>>& params) override {
    std::string text(sql);
    pg::CheckOneStatement(text);
    std::vector<std::string> literals(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) pg::internal::AppendLiteral(tx_, &literals[i], params[i]);
    tx_.ExecWithCommit(pg::SubstituteParameters(text, literals));
  }
  bool EndPhase() override { return tx_.EndPhase(); }

  // A deferred claim this transaction has not written yet: committing now
  // would keep the first phase's work without its key.
  bool claim_unwritten() const { return deferred_.has_value(); }

 private:
  // A deferred claim (ClaimParams::defer_insert) until its row is written.
  struct Deferred {
    ClaimParams claim;
    std::int64_t id = 0;
    std::string stable_id;
    std::optional<seal::DataKey> live;  // the data key the row is sealed under
  };

  // The account's live data key for a new row (nullopt: stored as they
  // are). KeyStore::PrepareAccount put it in the cache just before.
  std::optional<seal::DataKey> LiveKey(int bucket, const std::string& account) {
    if (!sealer_.enabled()) return std::nullopt;
    auto key = sealer_.CachedLiveKey(bucket, account);
    if (!key) throw pg::Rollback{Status::Retryable("the account's data key left the cache before the claim")};
    return key;
  }

  static std::optional<std::string> IdText(const std::optional<seal::DataKey>& key) {
    if (!key) return std::nullopt;
    return std::to_string(key->id);
  }

  static seal::RowCipher Cipher(const std::optional<seal::DataKey>& key, const ClaimParams& p) {
    return seal::RowCipher(key ? &key->key : nullptr, p.bucket, p.account, p.idempotency_key);
  }
  // The planted bug no_fencing (planted_bug.h): the row is made to look
  // held by `f`, so the fenced write that follows cannot miss.
  void SeizeIfPlanted(const Fence& f) {
    if (PlantedBug("no_fencing"))
      pg::Exec(tx_, sql::q::PlantedBugSeizeKey, f.account, f.key, f.owner_token, f.point, f.bucket);
  }

  static seal::RowCipher Cipher(const std::optional<seal::Key>& key, const Fence& f) {
    return seal::RowCipher(key ? &*key : nullptr, f.bucket, f.account, f.key);
  }

  // The key the fenced row is sealed under, when `needed` (something is to
  // be sealed) and the row has one; an empty optional otherwise. The outer
  // nullopt: the data key was erased under us (the account was erased,
  // which parks the key too): the write is fenced out, as when the lease
  // is lost (thrown as a rollback for a move or a finish).
  std::optional<std::optional<seal::Key>> FenceKey(const Fence& f, bool needed, bool lost_is_fence = true) {
    if (!needed || f.data_key_id == 0) return std::optional<seal::Key>();
    auto key = sealer_.KeyById(tx_, f.bucket, f.data_key_id);
    if (key) return key;
    if (lost_is_fence) throw pg::Rollback{Status::FailedPrecondition("the account was erased while the key ran")};
    return std::nullopt;
  }

  // `row` with its bodies opened (or dropped, when the account was erased).
  std::optional<ExistingRow> Opened(std::optional<ExistingRow> row, int bucket, const std::string& account,
                                    const std::string& key) {
    if (!row) return row;
    if (row->erased) {
      DropBodies(&*row);
      return row;
    }
    if (row->data_key_id == 0) return row;
    const std::optional<seal::Key> data_key = sealer_.KeyById(tx_, bucket, row->data_key_id);
    if (!data_key) {
      DropBodies(&*row);
      return row;
    }
    const seal::RowCipher cipher(&*data_key, bucket, account, key);
    if (!row->canonical_body.empty()) row->canonical_body = cipher.OpenRequest(row->canonical_body);
    if (row->response && !row->response->body.empty()) row->response->body = cipher.OpenResponse(row->response->body);
    row->outcomes = cipher.OpenOutcomes(row->outcomes);
    return row;
  }

  // The deferred claim `f` fences, once (nullopt: the row exists already).
  std::optional<Deferred> TakeDeferred(const Fence& f) {
    if (!deferred_ || deferred_->id != f.id) return std::nullopt;
    std::optional<Deferred> d = std::move(deferred_);
    deferred_.reset();
    return d;
  }

  pg::Tx& tx_;
  seal::Sealer& sealer_;
  std::optional<Deferred> deferred_;
};

class PgKeyStore final : public KeyStore {
 public:
  PgKeyStore(std::unique_ptr<pg::Pool> pool, std::shared_ptr<seal::Sealer> sealer)
      : pool_(std::move(pool)), sealer_(std::move(sealer)) {}

  Status Transact(const std::function<void(KeyTx&)>& fn, pg::Tx::Start start) override {
    return pool_->Transact(
        [&](pg::Tx& tx) {
          PgKeyTx keys(tx, *sealer_);
          fn(keys);
          if (keys.claim_unwritten()) {
            throw std::logic_error("a deferred claim's transaction ended without KeyMove or KeyFinish");
          }
        },
        start);
  }

  Status PrepareAccount(int bucket, const std::string& account) override {
    if (!sealer_->enabled() || sealer_->LiveKeyFresh(bucket, account)) return Status::OK();
    return pool_->Transact([&](pg::Tx& tx) { sealer_->LiveKey(tx, bucket, account); });
  }

 private:
  const std::unique_ptr<pg::Pool> pool_;
  const std::shared_ptr<seal::Sealer> sealer_;
};

}  // namespace

Result<std::shared_ptr<seal::Sealer>> OpenSealer(const EncryptionOptions& options, pg::Pool& pool) {
  auto sealer = seal::OpenSealer(options, [&](const std::function<void(pqxx::transaction_base&)>& fn) {
    return pool.Transact([&](pg::Tx& tx) { fn(tx); });
  });
  static std::once_flag said;
  if (sealer && !(*sealer)->enabled())
    std::call_once(said, [] {
      LogJson({{"level", "warn"},
               {"msg",
                "request and response bodies are stored unencrypted: no key-encryption key is configured "
                "(RunnerOptions::encryption, docs/data-protection.md)"}});
    });
  return sealer;
}

std::unique_ptr<KeyStore> NewPgKeyStore(std::unique_ptr<pg::Pool> pool, std::shared_ptr<seal::Sealer> sealer) {
  return std::make_unique<PgKeyStore>(std::move(pool), std::move(sealer));
}

}  // namespace phasekey::runner
