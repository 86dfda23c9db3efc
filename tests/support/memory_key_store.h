// MemoryKeyStore: an in-memory runner::KeyStore for unit tests of the
// runner's decisions (claim, replay, 409, 422, take-over, release, finish,
// stop, lease lost) without a database.
//
// It keeps the semantics of sql/queries/key_store.sql that the runner relies
// on: a transaction sees its own writes and keeps none of them unless it
// commits; KeyMove and KeyFinish are applied at COMMIT and a lost fence
// fails the commit with kFailedPrecondition; a deferred claim
// (ClaimParams::defer_insert) is inserted at once, which the runner cannot
// tell from an insert at COMMIT here, with no concurrent claimant; every
// later write is fenced on
// (bucket, account, id, owner token, recovery point, state active); a
// transaction started with Start::kWithFirstStatement may send nothing
// before KeyClaim (anything else throws std::logic_error, as a statement
// sent outside the transaction would be a bug). Timestamps come from the
// store's own clock, real time plus what Advance() added.
//
// Not modelled: row locks and concurrent claimants (transactions run one at
// a time), and atomic phases' own statements (KeyTx::phase_tx() is null, so
// AtomicContext::tx() throws).
//
// Thread-safety: all methods are thread-safe; a phase running inside
// Transact() (an atomic phase) must not call the store's test methods.
#ifndef PHASEKEY_TESTS_SUPPORT_MEMORY_KEY_STORE_H_
#define PHASEKEY_TESTS_SUPPORT_MEMORY_KEY_STORE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runner/key_store.h"

namespace phasekey::testing {

class MemoryKeyStore final : public runner::KeyStore {
 public:
  using Clock = std::chrono::steady_clock;

  // The columns of phasekey.idempotency_keys the runner reads or writes.
  struct Row {
    std::int64_t id = 0;
    std::string stable_id;
    int bucket = 0;
    std::string account, idempotency_key, flow, method, path, canonical_body, fingerprint_hex;
    runner::KeyState state = runner::KeyState::kActive;
    std::string recovery_point = "started";
    std::optional<std::string> owner_token;
    std::optional<Clock::time_point> lease_expires_at, next_attempt_at;
    int attempts = 1;
    int failures = 0;
    std::optional<Response> response;
    nlohmann::json outcomes = nlohmann::json::object();
    Clock::time_point created_at, point_reached_at;
    std::optional<std::string> last_error;
    std::optional<runner::ErrorClass> error_class;  // set with every error written to last_error
    std::string trace_parent;                       // "" : NULL
  };

  // One call of Transact(), for tests that count round trips.
  struct TxRecord {
    pg::Tx::Start start = pg::Tx::Start::kAtOnce;
    std::vector<std::string> statements;  // query names; "<name> with COMMIT" for the queued ones
    Status status;                        // what Transact returned
  };

  Status Transact(const std::function<void(runner::KeyTx&)>& fn, pg::Tx::Start start) override;

  // The store's clock: real time plus every Advance().
  Clock::time_point Now() const;
  void Advance(std::chrono::seconds by);

  // The committed row of the key, if any.
  std::optional<Row> Find(const std::string& account, const std::string& key) const;
  // Inserts or replaces a committed row (a key seeded mid-flight); an id of
  // 0 gets a fresh one, and an empty stable_id one derived from the id.
  // Returns the row as stored.
  Row Put(Row row);

  // The next commit returns `status` instead of OK; with `applied` its
  // writes are kept all the same (a commit whose answer was lost).
  void FailNextCommit(Status status, bool applied);

  std::vector<TxRecord> transactions() const;
  // Payloads of the re-drive notifications committed: "<bucket> <ms>".
  std::vector<std::string> notifications() const;

 private:
  class Tx;
  using RowKey = std::tuple<int, std::string, std::string>;  // bucket, account, key

  mutable std::mutex mu_;
  std::map<RowKey, Row> rows_;
  std::int64_t next_id_ = 1;
  Clock::duration offset_{0};
  std::optional<std::pair<Status, bool>> fail_next_commit_;
  std::vector<TxRecord> transactions_;
  std::vector<std::string> notifications_;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_MEMORY_KEY_STORE_H_
