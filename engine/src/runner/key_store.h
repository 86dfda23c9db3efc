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

struct ExistingRow {
  std::int64_t id = 0;
  std::string stable_id, flow, method, path, fingerprint_hex, state, recovery_point, canonical_body;
  std::optional<std::string> owner_token;
  bool leased = false;
  int retry_after_s = 1;
  int attempts = 0;
  std::optional<Response> response;  // state == "finished"
  nlohmann::json outcomes;
  std::int64_t age_s = 0;  // seconds since created_at, database clock
};

// INSERT ... ON CONFLICT DO NOTHING RETURNING: the row when we created it.
std::optional<ClaimedRow> KeyClaim(pqxx::work& tx, const ClaimParams& p);
// The existing row, unlocked (nullopt if it vanished meanwhile).
std::optional<ExistingRow> KeyGet(pqxx::work& tx, int bucket, const std::string& account, const std::string& key);
// The existing row, locked FOR UPDATE (nullopt if it vanished meanwhile).
std::optional<ExistingRow> KeyGetForUpdate(pqxx::work& tx, int bucket, const std::string& account,
                                          const std::string& key);
// Takes a free or expired lease; the attempt count after taking, or nullopt.
std::optional<int> KeyTakeOver(pqxx::work& tx, int bucket, const std::string& account, std::int64_t id,
                               const std::string& owner_token, std::chrono::milliseconds lease);
bool KeyMove(pqxx::work& tx, const Fence& f, const std::string& next, const nlohmann::json& outcomes,
             std::chrono::milliseconds lease);
bool KeyFinish(pqxx::work& tx, const Fence& f, const nlohmann::json& outcomes, const Response& response,
               const std::optional<std::string>& last_error);
bool KeyRelease(pqxx::work& tx, const Fence& f, const std::string& last_error, std::chrono::milliseconds retry_in);
bool KeyRenewLease(pqxx::work& tx, const Fence& f, std::chrono::milliseconds lease);

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_KEY_STORE_H_
