// KeyStore: one function per named query of sql/queries/key_store.sql, on
// the idempotency key row. Each runs inside the caller's transaction; none
// commits. Every write after the claim is fenced: it takes a Fence and
// returns false when the row no longer matches it (the caller lost its
// lease or the key moved on), in which case the caller must roll back.
//
// Errors: libpqxx exceptions propagate to the pool, which classifies them.
#ifndef PHASEKEY_SRC_RUNNER_KEY_STORE_H_
#define PHASEKEY_SRC_RUNNER_KEY_STORE_H_

#include <pqxx/transaction>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "phasekey/flow.h"
#include "pg/transaction.h"

namespace phasekey::runner {

// The caller's claim on a key row: who holds it and where it was last
// committed.
struct Fence {
  int bucket = 0;
  std::string account;
  std::int64_t id = 0;
  std::string owner_token;  // uuid text
  std::string point;        // the recovery point the row is at
};

struct ClaimParams {
  std::string account, idempotency_key, flow, method, path, canonical_body, fingerprint_hex, owner_token;
  int bucket = 0;
  std::chrono::milliseconds lease{0};
};

struct ClaimedRow {
  std::int64_t id = 0;
  std::string stable_id;
  int attempts = 0;
  nlohmann::json outcomes;
  std::int64_t age_s = 0;  // seconds since created_at, database clock
};

// The key's state (the enum phasekey.key_state of sql/migrations).
enum class KeyState { kActive, kFinished, kDead, kNeedsOperator };
// The state's name in phasekey.key_state (for statements, logs and metrics).
const char* KeyStateName(KeyState state);

struct ExistingRow {
  std::int64_t id = 0;
  std::string stable_id, flow, method, path, fingerprint_hex, recovery_point, canonical_body;
  KeyState state = KeyState::kActive;
  std::optional<std::string> owner_token;
  bool leased = false;
  // Seconds left on a live lease, otherwise until next_attempt_at (at least 1).
  int retry_after_s = 1;
  int attempts = 0;  // claims, take-overs included
  int failures = 0;  // unclassified failures
  std::optional<Response> response;  // state == kFinished
  nlohmann::json outcomes;
  std::int64_t age_s = 0;        // seconds since created_at, database clock
  std::int64_t point_age_s = 0;  // seconds since it reached recovery_point
  std::string last_error;
};

// What KeyClaim found: the row it created, or the row that holds the key
// (neither: another claimant committed the key while we waited; read it
// with KeyGet).
struct ClaimOutcome {
  std::optional<ClaimedRow> claimed;
  std::optional<ExistingRow> existing;
};

// Where a failed holder leaves the key: the point its recorded outcomes lead
// to (ahead of the fence after a successful foreign phase) and those
// outcomes, written in the same fenced statement as the release or stop.
struct Leftover {
  std::string point;
  nlohmann::json outcomes = nlohmann::json::object();
};

// Claims the key, or returns the row holding it, in one statement (sent
// with the transaction's BEGIN when that is still pending).
ClaimOutcome KeyClaim(pg::Tx& tx, const ClaimParams& p);
// The existing row, unlocked (nullopt if it vanished meanwhile).
std::optional<ExistingRow> KeyGet(pqxx::transaction_base& tx, int bucket, const std::string& account, const std::string& key);
// The existing row, locked FOR UPDATE (nullopt if it vanished meanwhile).
std::optional<ExistingRow> KeyGetForUpdate(pqxx::transaction_base& tx, int bucket, const std::string& account,
                                          const std::string& key);
// Takes a free or expired lease; the attempt count after taking, or nullopt.
std::optional<int> KeyTakeOver(pqxx::transaction_base& tx, int bucket, const std::string& account, std::int64_t id,
                               const std::string& owner_token, std::chrono::milliseconds lease);
// The fenced move and finish are the last statements of their transaction:
// they are queued to travel with its COMMIT (one round trip for both). When
// the fence does not match, nothing commits and Pool::Transact returns
// kFailedPrecondition (the lease was lost).
void KeyMove(pg::Tx& tx, const Fence& f, const std::string& next, const nlohmann::json& outcomes,
             std::chrono::milliseconds lease);
void KeyFinish(pg::Tx& tx, const Fence& f, const nlohmann::json& outcomes, const Response& response,
               const std::optional<std::string>& last_error);
// Releases the lease after a retryable (or, with `unclassified`, a counted)
// failure; next_attempt_at is `retry_in` from now.
bool KeyRelease(pqxx::transaction_base& tx, const Fence& f, const Leftover& left, const std::string& last_error,
                std::chrono::milliseconds retry_in, bool unclassified);
// Ends the key without a response in `state` (kDead or kNeedsOperator).
bool KeyStop(pqxx::transaction_base& tx, const Fence& f, const Leftover& left, KeyState state, const std::string& why);
bool KeyRenewLease(pqxx::transaction_base& tx, const Fence& f, std::chrono::milliseconds lease);

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_KEY_STORE_H_
