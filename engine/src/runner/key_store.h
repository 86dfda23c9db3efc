// KeyStore: the named queries of sql/queries/key_store.sql on the
// idempotency key row, one method each (same names), behind an interface so
// the runner's decisions can be tested over an in-memory double
// (tests/support/memory_key_store.h) as well as over PostgreSQL
// (runner/pg_key_store.h). Rows are parsed here, once: callers see named
// fields and a KeyState, never a column or a state string.
//
// Every write after the claim is fenced: it takes a Fence and matches only
// while the row still matches it (the caller holds the lease at the
// recovery point it expects). KeyRelease, KeyStop and KeyRenewLease return
// false when it does not; KeyMove and KeyFinish travel with COMMIT and a
// lost fence fails the commit (KeyStore::Transact returns
// kFailedPrecondition and nothing of the transaction is kept).
//
// Errors: a store's failures (libpqxx exceptions for PostgreSQL) propagate
// out of the KeyTx methods to KeyStore::Transact, which classifies them.
#ifndef PHASEKEY_SRC_RUNNER_KEY_STORE_H_
#define PHASEKEY_SRC_RUNNER_KEY_STORE_H_

#include <pqxx/transaction>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pg/transaction.h"
#include "phasekey/flow.h"
#include "phasekey/status.h"

namespace phasekey::runner {

// The caller's claim on a key row: who holds it and where it was last
// committed.
struct Fence {
  int bucket = 0;
  std::string account;
  std::string key;          // the client's idempotency key: with bucket and account, the row's primary key
  std::int64_t id = 0;      // the row's id, for logs and operators; 0 until a claim holds the row
  std::string owner_token;  // uuid text
  std::string point;        // the recovery point the row is at
  // The data key the row's bodies are sealed under (0: stored as they are).
  std::int64_t data_key_id = 0;
};

struct ClaimParams {
  std::string account, idempotency_key, flow, method, path, canonical_body, fingerprint_hex, owner_token;
  std::string flow_version;  // Flow::version(), kept on a new key
  int bucket = 0;
  std::chrono::milliseconds lease{0};
  // A new key's row is not inserted by the claim but by the transaction's
  // KeyMove or KeyFinish, already at its next point (one row version
  // fewer). The caller must end the transaction with one of them (the first
  // atomic phase's); a store that is given a deferred claim and neither
  // fails the transaction. ClaimedRow's id and stable_id are reserved for
  // the row meanwhile.
  bool defer_insert = false;
  // The key must exist already (Runner::Resume): KeyClaimExisting, which
  // never inserts; a vanished key comes back as neither claimed nor
  // existing nor busy.
  bool must_exist = false;
  // The request's traceparent in its version-00 form, stored on a new key
  // only (nullopt: NULL, the request had none).
  std::optional<std::string> trace_parent = std::nullopt;
};

struct ClaimedRow {
  std::int64_t id = 0;
  std::string stable_id;
  int attempts = 0;
  nlohmann::json outcomes;
  std::int64_t age_s = 0;        // seconds since created_at, database clock
  std::int64_t data_key_id = 0;  // the data key its bodies are sealed under (0: none)
};

// The key's state (the enum phasekey.key_state of sql/migrations).
enum class KeyState { kActive, kFinished, kDead, kNeedsOperator };
// The state's name in phasekey.key_state (for statements, logs and metrics).
const char* KeyStateName(KeyState state);

// The class of a key's last error (the enum phasekey.error_class of
// sql/migrations/0003_error_class.sql, which says what each means), written
// with every error the engine records on a key.
enum class ErrorClass {
  kRetryable,
  kOutcomeUnknown,
  kTerminal,
  kNeedsOperator,
  kNotTaken,
  kUnclassified,
  kLookupRequired,
  kGivenUp,
  kStranded,
  kRetiredPoint,
  kErased
};
// The class's name in phasekey.error_class.
const char* ErrorClassName(ErrorClass error_class);

struct ExistingRow {
  std::int64_t id = 0;
  std::string stable_id, flow, method, path, fingerprint_hex, recovery_point, canonical_body;
  KeyState state = KeyState::kActive;
  std::optional<std::string> owner_token;
  bool leased = false;
  // Seconds left on a live lease, otherwise until next_attempt_at (at least 1).
  int retry_after_s = 1;
  int attempts = 0;                  // claims, take-overs included
  int failures = 0;                  // unclassified failures
  std::optional<Response> response;  // state == kFinished
  nlohmann::json outcomes;
  std::int64_t age_s = 0;        // seconds since created_at, database clock
  std::int64_t point_age_s = 0;  // seconds since it reached recovery_point
  std::string last_error;
  // The data key its bodies are sealed under (0: none). canonical_body,
  // response and outcomes are given opened.
  std::int64_t data_key_id = 0;
  // The account was erased (EraseAccount, or its data key destroyed): the
  // bodies are gone; canonical_body and the response body are empty and the
  // outcomes' values null.
  bool erased = false;
  // The traceparent the key was created with (version-00 form), "" when none.
  std::string trace_parent;
};

// What KeyClaim found: the row it created, or the row that holds the key
// (neither: another claimant committed the key while we waited; read it
// with KeyGet).
struct ClaimOutcome {
  std::optional<ClaimedRow> claimed;
  std::optional<ExistingRow> existing;
  // Neither: another claimant is inserting the key in a transaction not yet
  // committed. The answer is 409 at once; nothing was written.
  bool busy = false;
};

// Where a failed holder leaves the key: the point its recorded outcomes lead
// to (ahead of the fence after a successful foreign phase) and those
// outcomes, written in the same fenced statement as the release or stop.
struct Leftover {
  std::string point;
  nlohmann::json outcomes = nlohmann::json::object();
};

// One open transaction of a KeyStore. Used by one thread, only inside the
// KeyStore::Transact call that made it.
class KeyTx {
 public:
  virtual ~KeyTx() = default;

  // Claims the key, or returns the row holding it, in one statement (sent
  // with the transaction's BEGIN when that is still pending): KeyClaim, or
  // KeyClaimDeferred when p.defer_insert.
  virtual ClaimOutcome KeyClaim(const ClaimParams& p) = 0;
  // The existing row, unlocked (nullopt if it vanished meanwhile).
  virtual std::optional<ExistingRow> KeyGet(int bucket, const std::string& account, const std::string& key) = 0;
  // The existing row, locked FOR UPDATE (nullopt if it vanished meanwhile).
  virtual std::optional<ExistingRow> KeyGetForUpdate(int bucket, const std::string& account,
                                                     const std::string& key) = 0;
  // Takes a free or expired lease of an active key; the attempt count after
  // taking, or nullopt.
  virtual std::optional<int> KeyTakeOver(int bucket, const std::string& account, const std::string& key,
                                         const std::string& owner_token, std::chrono::milliseconds lease) = 0;
  // The fenced move and finish are the last statements of their transaction:
  // they are queued to travel with its COMMIT (one round trip for both).
  // When the fence does not match, nothing commits and Transact returns
  // kFailedPrecondition (the lease was lost). After a deferred claim in the
  // same transaction they insert the row instead (fenced by the unique
  // index: a claimant that committed the key meanwhile fails it the same
  // way).
  virtual void KeyMove(const Fence& f, const std::string& next, const nlohmann::json& outcomes,
                       std::chrono::milliseconds lease) = 0;
  // A finish with a failure's response records `last_error` of class
  // `error_class`; without `last_error` both are cleared.
  virtual void KeyFinish(const Fence& f, const nlohmann::json& outcomes, const Response& response,
                         const std::optional<std::string>& last_error, ErrorClass error_class) = 0;
  // Releases the lease after a failure of class `error_class`; only
  // kUnclassified (a bug) counts in failures. next_attempt_at is `retry_in`
  // from now.
  virtual bool KeyRelease(const Fence& f, const Leftover& left, const std::string& last_error, ErrorClass error_class,
                          std::chrono::milliseconds retry_in) = 0;
  // Ends the key without a response in `state` (kDead or kNeedsOperator),
  // `why` appended to last_error, of class `error_class`.
  virtual bool KeyStop(const Fence& f, const Leftover& left, KeyState state, const std::string& why,
                       ErrorClass error_class) = 0;
  virtual bool KeyRenewLease(const Fence& f, std::chrono::milliseconds lease) = 0;
  // Wakes re-drive workers of `bucket` at commit: a released key is due in
  // `due_in`.
  virtual void KeyNotifyRedrive(int bucket, std::chrono::milliseconds due_in) = 0;

  // True while a transaction started with Start::kWithFirstStatement has
  // sent nothing: KeyClaim then carries BEGIN, and any other statement has
  // BEGIN sent ahead of it (pg/transaction.h).
  virtual bool begin_pending() const = 0;
  // The transaction atomic phases run their own statements in
  // (AtomicContext::tx()), begun when BEGIN was still pending; nullptr for a
  // store without a database.
  virtual pqxx::transaction_base* phase_tx() = 0;
  // Queues a statement of the running atomic phase
  // (AtomicContext::ExecAtCommit) to run ahead of the move or finish, with
  // COMMIT. Throws pqxx::usage_error on more than one statement or a
  // parameter without a value, std::logic_error for a store without a
  // database.
  virtual void QueuePhaseStatement(std::string_view sql, const std::vector<std::optional<std::string>>& params) {
    (void)sql;
    (void)params;
    throw std::logic_error("this key store has no database to run a phase's statements in");
  }
  // Brackets a phase's use of phase_tx(). A phase must not end it: when it
  // called commit() or abort() on it, EndPhase() rolls the transaction back
  // at once (nothing of the phase and no key row kept) and returns true; the
  // engine then fails the phase as a bug and writes nothing more in this
  // transaction (pg::Tx::EndPhase).
  virtual void BeginPhase() {}
  virtual bool EndPhase() { return false; }
};

// A store of idempotency keys: transactions on the key rows.
// Thread-safety: all methods are thread-safe.
class KeyStore {
 public:
  virtual ~KeyStore() = default;
  // Runs `fn` in one transaction and commits it (one attempt; the caller
  // decides about retries). `start`: see pg/transaction.h. Returns OK when
  // it committed, else what went wrong (nothing of `fn` is kept, except
  // with kOutcomeUnknown):
  //   the Status of a pg::Rollback thrown by `fn` (a rollback on purpose);
  //   kFailedPrecondition  a KeyMove or KeyFinish found its fence gone;
  //   kOutcomeUnknown      the commit may or may not have happened;
  //   kRetryable, kDeadlineExceeded  a transient failure;
  //   any other code       a failure nobody classified.
  virtual Status Transact(const std::function<void(KeyTx&)>& fn, pg::Tx::Start start) = 0;
  // Makes ready what a claim of a new key of `account` needs before its
  // first statement (the account's data key, when bodies are sealed): a
  // transaction of its own when it is not at hand. A failure is classified
  // as Transact's are.
  virtual Status PrepareAccount(int bucket, const std::string& account) {
    (void)bucket;
    (void)account;
    return Status::OK();
  }
};

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_KEY_STORE_H_
