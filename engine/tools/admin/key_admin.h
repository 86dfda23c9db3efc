// KeyAdmin: one function per named query of sql/queries/key_admin.sql. Each
// opens its own connection; failures come back as Status.
#ifndef PHASEKEY_TOOLS_SRC_ADMIN_KEY_ADMIN_H_
#define PHASEKEY_TOOLS_SRC_ADMIN_KEY_ADMIN_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/transaction_base>

#include "pg/operator_support.h"
#include "pg/with_connection.h"
#include "phasekey/status.h"

namespace phasekey::seal {
class Sealer;
}  // namespace phasekey::seal

namespace phasekey::admin {

// The core's operator helpers, by their names here (pg/operator_support.h).
using pg::ActorProblem;
using pg::BucketOf;
using pg::WithConnection;

// Which keys an operator means (keys list, the batch actions, the console's
// keys page): every field given must match. The SQL and what each filter
// costs: sql/queries/key_admin.sql.
struct KeyFilter {
  std::optional<std::string> account, flow, recovery_point;
  std::optional<std::string> state;                // a name of phasekey.key_state (KeyStates())
  std::optional<std::string> error_class;          // a name of phasekey.error_class (ErrorClasses())
  bool stuck = false;                              // active with an expired lease or attempts piling up
  int stuck_attempts = 3;                          // "piling up": at least this many claims
  std::chrono::seconds older_than{0};              // created at least this long ago
  std::optional<std::chrono::seconds> newer_than;  // created less than this long ago
  int limit = 100;                                 // AdminKeysList only
};

// The names a filter's state and error class may take, in the database's
// order (phasekey.key_state; phasekey.error_class, whose comments in
// sql/migrations/0003_error_class.sql say what each means).
const std::vector<std::string>& KeyStates();
const std::vector<std::string>& ErrorClasses();
// Why `filter` cannot be run ("" when it can), in one line naming the
// value and what it may be: an unknown state or error class, a negative
// age, or newer_than not above older_than.
std::string FilterProblem(const KeyFilter& filter);
// The filter's given fields as JSON (for the audit trail and the CLI's
// output); limit left out.
nlohmann::json FilterJson(const KeyFilter& filter);

// Rows oldest first, at most filter.limit: account, key, flow, state,
// recovery_point, attempts, leased, lease_expired, age_s, last_error,
// error_class (null: none) and owner_token (null: no lease).
// InvalidArgument (FilterProblem) before anything is run.
Result<nlohmann::json> AdminKeysList(const std::string& url, const KeyFilter& filter);
// `buckets` in these: 0 takes the deployment's count from the database;
// another value must match it (FailedPrecondition otherwise).
//
// Every field of one key, its bodies never shown: request_body and
// response_body are summaries {"stored": "sealed" | "plain" | "dropped" |
// "none" | "erased", "bytes": N} (dropped: the request body of a finished
// key, gone; none: no response yet; erased: the account was erased), and
// outcomes maps each recovery point to such a summary. AdminKeyReveal opens
// them.
Result<nlohmann::json> AdminKeyShow(const std::string& url, int buckets, const std::string& account,
                                    const std::string& key);
// Who acts, for the audit trail (phasekey.operator_audit): the console's
// operator or the CLI's --actor / OS user; 1 to 100 characters of UTF-8.
// The retry and release below write their audit row in the action's own
// transaction, refusals included: no action without its row. When the row
// cannot be written, nothing of the action is kept and the call fails
// (kInvalidArgument for an actor that is not valid, else the database's).
struct Actor {
  std::string name;
};

// The recovery point the key is put back at; NotFound unless it was dead,
// or, with `verified_not_taken` (the operator checked at the provider that
// nothing took effect), parked for an operator. Audited as "retry" or
// "retry_verified".
Result<std::string> AdminKeyRetry(const std::string& url, int buckets, const std::string& account,
                                  const std::string& key, bool verified_not_taken, const Actor& actor);
// NotFound unless the key still had exactly this owner token. Audited as
// "release".
Result<std::string> AdminKeyRelease(const std::string& url, int buckets, const std::string& account,
                                    const std::string& key, const std::string& owner_token, const Actor& actor);
// AdminKeyShow's row with the bodies opened for an operator who asked for
// this one key (`keys show --reveal`, the console's "Reveal bodies"):
// request_body and response_body as text (null when not stored), outcomes
// by recovery point with their values, each masked with the flow's
// pointers (phasekey.flow_masks; "masked" lists them). `sealer` opens a
// sealed row: it is verified against the database first; a disabled one
// opens only rows stored as they are. Audited as "reveal" in the
// transaction that reads the row, refusals too: when the row cannot be
// written, nothing is shown (the database's failure). NotFound for no such
// key; FailedPrecondition for a sealed row without key-encryption keys, a
// keyring that does not match the database, an erased account or data key,
// or a body that does not open.
Result<nlohmann::json> AdminKeyReveal(const std::string& url, int buckets, const std::string& account,
                                      const std::string& key, seal::Sealer& sealer, const Actor& actor);
// With "suspected_key_regeneration": keys that repeat an earlier key's
// request within their flow's window (AdminSuspectedRegenerations, the rule
// the reaper's audit counts by): the newest `regeneration_limit` pairs and
// the count per flow. A flow's window is its entry in `window_by_flow`, else
// `regeneration_window`; given the reaper's RegenerationAuditOptions, the
// pairs listed are the ones its counter counts.
Result<nlohmann::json> AdminStats(const std::string& url, std::chrono::seconds regeneration_window,
                                  int regeneration_limit = 20,
                                  const std::map<std::string, std::chrono::seconds>& window_by_flow = {});
// What the reaper would delete and keep with these retentions
// (ReaperOptions::retention, dead_retention, needs_operator_retention; 0 for
// the last two keeps those keys), over every bucket: would_delete,
// oldest_finished_at, kept_unfinished, kept_dead, would_delete_dead,
// would_delete_needs_operator.
Result<nlohmann::json> AdminReapPreview(const std::string& url, std::chrono::seconds retention,
                                        std::chrono::seconds dead_retention,
                                        std::chrono::seconds needs_operator_retention);

}  // namespace phasekey::admin

#endif  // PHASEKEY_TOOLS_SRC_ADMIN_KEY_ADMIN_H_
