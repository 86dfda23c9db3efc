#include "support/memory_key_store.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

namespace phasekey::testing {
namespace {

using runner::KeyState;

bool Holds(const MemoryKeyStore::Row& row, const runner::Fence& f) {
  return row.bucket == f.bucket && row.account == f.account && row.idempotency_key == f.key &&
         row.owner_token == f.owner_token && row.recovery_point == f.point && row.state == KeyState::kActive;
}

std::int64_t SecondsBetween(MemoryKeyStore::Clock::time_point from, MemoryKeyStore::Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::seconds>(to - from).count();
}

}  // namespace

// One transaction: statements run on a copy of the committed rows, which
// replaces them at COMMIT once the queued statements have run.
class MemoryKeyStore::Tx final : public runner::KeyTx {
 public:
  Tx(MemoryKeyStore& store, pg::Tx::Start start, TxRecord& record)
      : store_(store),
        rows_(store.rows_),
        begin_pending_(start == pg::Tx::Start::kWithFirstStatement),
        record_(record) {}

  runner::ClaimOutcome KeyClaim(const runner::ClaimParams& p) override {
    Sent("KeyClaim", /*first_allowed=*/true);
    runner::ClaimOutcome out;
    auto it = rows_.find({p.bucket, p.account, p.idempotency_key});
    if (it != rows_.end()) {
      out.existing = Existing(it->second);
      return out;
    }
    if (p.must_exist) return out;  // KeyClaimExisting never inserts
    Row row;
    row.id = store_.next_id_++;
    row.stable_id = "00000000-0000-4000-8000-" + std::to_string(100000000000 + row.id);
    row.bucket = p.bucket;
    row.account = p.account;
    row.idempotency_key = p.idempotency_key;
    row.flow = p.flow;
    row.method = p.method;
    row.path = p.path;
    row.canonical_body = p.canonical_body;
    row.fingerprint_hex = p.fingerprint_hex;
    row.trace_parent = p.trace_parent.value_or("");
    row.owner_token = p.owner_token;
    row.lease_expires_at = Now() + p.lease;
    row.created_at = row.point_reached_at = Now();
    rows_[{p.bucket, p.account, p.idempotency_key}] = row;
    out.claimed = runner::ClaimedRow{row.id, row.stable_id, row.attempts, row.outcomes, 0};
    return out;
  }

  std::optional<runner::ExistingRow> KeyGet(int bucket, const std::string& account, const std::string& key) override {
    Sent("KeyGet");
    auto it = rows_.find({bucket, account, key});
    if (it == rows_.end()) return std::nullopt;
    return Existing(it->second);
  }

  std::optional<runner::ExistingRow> KeyGetForUpdate(int bucket, const std::string& account,
                                                     const std::string& key) override {
    Sent("KeyGetForUpdate");
    auto it = rows_.find({bucket, account, key});
    if (it == rows_.end()) return std::nullopt;
    return Existing(it->second);
  }

  std::optional<int> KeyTakeOver(int bucket, const std::string& account, const std::string& key,
                                 const std::string& owner_token, std::chrono::milliseconds lease) override {
    Sent("KeyTakeOver");
    Row* row = ByKey(bucket, account, key);
    if (row == nullptr || row->state != KeyState::kActive) return std::nullopt;
    if (row->owner_token && !(row->lease_expires_at && *row->lease_expires_at <= Now())) return std::nullopt;
    row->owner_token = owner_token;
    row->lease_expires_at = Now() + lease;
    return ++row->attempts;
  }

  void KeyMove(const runner::Fence& f, const std::string& next, const nlohmann::json& outcomes,
               std::chrono::milliseconds lease) override {
    record_.statements.push_back("KeyMove with COMMIT");
    queued_.push_back([this, f, next, outcomes, lease] {
      Row* row = Fenced(f);
      if (row == nullptr) return false;
      row->recovery_point = next;
      row->point_reached_at = Now();
      row->outcomes.update(outcomes);
      row->lease_expires_at = Now() + lease;
      return true;
    });
  }

  void KeyFinish(const runner::Fence& f, const nlohmann::json& outcomes, const Response& response,
                 const std::optional<std::string>& last_error, runner::ErrorClass error_class) override {
    record_.statements.push_back("KeyFinish with COMMIT");
    queued_.push_back([this, f, outcomes, response, last_error, error_class] {
      Row* row = Fenced(f);
      if (row == nullptr) return false;
      row->state = KeyState::kFinished;
      row->recovery_point = "finished";
      row->outcomes.update(outcomes);
      row->response = response;
      row->last_error = last_error;
      row->error_class = last_error ? std::optional<runner::ErrorClass>(error_class) : std::nullopt;
      row->owner_token.reset();
      row->lease_expires_at.reset();
      return true;
    });
  }

  bool KeyRelease(const runner::Fence& f, const runner::Leftover& left, const std::string& last_error,
                  runner::ErrorClass error_class, std::chrono::milliseconds retry_in) override {
    Sent("KeyRelease");
    Row* row = Fenced(f);
    if (row == nullptr) return false;
    row->owner_token.reset();
    row->lease_expires_at.reset();
    row->last_error = last_error;
    row->error_class = error_class;
    row->next_attempt_at = Now() + retry_in;
    LeaveAt(*row, left);
    if (error_class == runner::ErrorClass::kUnclassified) ++row->failures;
    return true;
  }

  bool KeyStop(const runner::Fence& f, const runner::Leftover& left, KeyState state, const std::string& why,
               runner::ErrorClass error_class) override {
    Sent("KeyStop");
    Row* row = Fenced(f);
    if (row == nullptr) return false;
    row->state = state;
    row->owner_token.reset();
    row->lease_expires_at.reset();
    LeaveAt(*row, left);
    row->last_error = row->last_error ? *row->last_error + " | " + why : why;
    row->error_class = error_class;
    return true;
  }

  bool KeyRenewLease(const runner::Fence& f, std::chrono::milliseconds lease) override {
    Sent("KeyRenewLease");
    Row* row = Fenced(f);
    if (row == nullptr) return false;
    row->lease_expires_at = Now() + lease;
    return true;
  }

  void KeyNotifyRedrive(int bucket, std::chrono::milliseconds due_in) override {
    Sent("KeyNotifyRedrive");
    notifications_.push_back(std::to_string(bucket) + " " + std::to_string(due_in.count()));
  }

  bool begin_pending() const override { return begin_pending_; }
  pqxx::transaction_base* phase_tx() override { return nullptr; }

  // Runs the statements queued with COMMIT; false when a fence did not hold
  // (then nothing may be kept).
  bool RunQueued() {
    return std::all_of(queued_.begin(), queued_.end(), [](const auto& statement) { return statement(); });
  }
  std::map<RowKey, Row>& rows() { return rows_; }
  const std::vector<std::string>& notifications() const { return notifications_; }

 private:
  Clock::time_point Now() const { return Clock::now() + store_.offset_; }

  // Records a statement sent at once; only the claim may carry BEGIN.
  void Sent(const std::string& name, bool first_allowed = false) {
    if (begin_pending_ && !first_allowed) {
      throw std::logic_error(name +
                             " sent before the claim of a transaction whose BEGIN travels with its first "
                             "statement: it would run outside the transaction");
    }
    begin_pending_ = false;
    record_.statements.push_back(name);
  }

  Row* ByKey(int bucket, const std::string& account, const std::string& key) {
    for (auto& [unused, row] : rows_) {
      if (row.bucket == bucket && row.account == account && row.idempotency_key == key) return &row;
    }
    return nullptr;
  }

  Row* Fenced(const runner::Fence& f) {
    Row* row = ByKey(f.bucket, f.account, f.key);
    return row != nullptr && Holds(*row, f) ? row : nullptr;
  }

  void LeaveAt(Row& row, const runner::Leftover& left) {
    if (row.recovery_point != left.point) row.point_reached_at = Now();
    row.recovery_point = left.point;
    row.outcomes.update(left.outcomes);
  }

  // The row as phasekey.key_rows_v2 shows it.
  runner::ExistingRow Existing(const Row& row) const {
    const auto now = Now();
    runner::ExistingRow e;
    e.id = row.id;
    e.stable_id = row.stable_id;
    e.flow = row.flow;
    e.method = row.method;
    e.path = row.path;
    e.fingerprint_hex = row.fingerprint_hex;
    e.recovery_point = row.recovery_point;
    e.canonical_body = row.canonical_body;
    e.state = row.state;
    e.owner_token = row.owner_token;
    e.leased = row.lease_expires_at && *row.lease_expires_at > now;
    const auto until = row.lease_expires_at ? row.lease_expires_at : row.next_attempt_at;
    if (until) {
      const double left = std::chrono::duration<double>(*until - now).count();
      e.retry_after_s = std::max(1, static_cast<int>(std::ceil(left)));
    }
    e.attempts = row.attempts;
    e.failures = row.failures;
    e.response = row.response;
    e.outcomes = row.outcomes;
    e.age_s = SecondsBetween(row.created_at, now);
    e.point_age_s = SecondsBetween(row.point_reached_at, now);
    e.last_error = row.last_error.value_or("");
    e.trace_parent = row.trace_parent;
    return e;
  }

  MemoryKeyStore& store_;
  std::map<RowKey, Row> rows_;
  bool begin_pending_;
  TxRecord& record_;
  std::vector<std::function<bool()>> queued_;
  std::vector<std::string> notifications_;
};

Status MemoryKeyStore::Transact(const std::function<void(runner::KeyTx&)>& fn, pg::Tx::Start start) {
  std::lock_guard<std::mutex> lock(mu_);
  TxRecord record;
  record.start = start;
  auto finish = [&](Status s) {
    record.status = s;
    transactions_.push_back(std::move(record));
    return s;
  };
  Tx tx(*this, start, record);
  try {
    fn(tx);
  } catch (const pg::Rollback& rollback) {
    return finish(rollback.status);
  } catch (const std::exception& e) {
    return finish(Status::Terminal(e.what()));  // as Pool classifies an exception it does not know
  }
  if (!tx.RunQueued()) return finish(Status::FailedPrecondition("fence lost: the key moved on or changed holder"));
  std::optional<std::pair<Status, bool>> failure;
  std::swap(failure, fail_next_commit_);
  if (failure && !failure->second) return finish(failure->first);
  rows_ = std::move(tx.rows());
  notifications_.insert(notifications_.end(), tx.notifications().begin(), tx.notifications().end());
  return finish(failure ? failure->first : Status::OK());
}

MemoryKeyStore::Clock::time_point MemoryKeyStore::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Clock::now() + offset_;
}

void MemoryKeyStore::Advance(std::chrono::seconds by) {
  std::lock_guard<std::mutex> lock(mu_);
  offset_ += by;
}

std::optional<MemoryKeyStore::Row> MemoryKeyStore::Find(const std::string& account, const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [row_key, row] : rows_) {
    if (row.account == account && row.idempotency_key == key) return row;
  }
  return std::nullopt;
}

MemoryKeyStore::Row MemoryKeyStore::Put(Row row) {
  std::lock_guard<std::mutex> lock(mu_);
  if (row.id == 0) row.id = next_id_++;
  if (row.stable_id.empty()) row.stable_id = "00000000-0000-4000-8000-" + std::to_string(100000000000 + row.id);
  rows_[{row.bucket, row.account, row.idempotency_key}] = row;
  return row;
}

void MemoryKeyStore::FailNextCommit(Status status, bool applied) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_next_commit_ = std::make_pair(std::move(status), applied);
}

std::vector<MemoryKeyStore::TxRecord> MemoryKeyStore::transactions() const {
  std::lock_guard<std::mutex> lock(mu_);
  return transactions_;
}

std::vector<std::string> MemoryKeyStore::notifications() const {
  std::lock_guard<std::mutex> lock(mu_);
  return notifications_;
}

}  // namespace phasekey::testing
