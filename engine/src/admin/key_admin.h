// KeyAdmin: one function per named query of sql/queries/key_admin.sql. Each
// opens its own connection; failures come back as Status.
#ifndef PHASEKEY_SRC_ADMIN_KEY_ADMIN_H_
#define PHASEKEY_SRC_ADMIN_KEY_ADMIN_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "phasekey/status.h"

namespace phasekey::admin {

struct KeyFilter {
  std::optional<std::string> account, flow, state;
  bool stuck = false;          // active with an expired lease or attempts piling up
  int stuck_attempts = 3;      // "piling up": at least this many claims
  std::chrono::seconds older_than{0};
  int limit = 100;
};

Result<nlohmann::json> AdminKeysList(const std::string& url, const KeyFilter& filter);
// `buckets` in these: 0 takes the deployment's count from the database;
// another value must match it (FailedPrecondition otherwise).
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
// Why `name` cannot name an actor ("" when it can): empty, more than 100
// characters, or not valid UTF-8.
std::string ActorProblem(const std::string& name);
// With "suspected_key_regeneration": keys that repeat an earlier key's
// request within their flow's window (AdminSuspectedRegenerations, the rule
// the reaper's audit counts by): the newest `regeneration_limit` pairs and
// the count per flow. A flow's window is its entry in `window_by_flow`, else
// `regeneration_window`; given the reaper's RegenerationAuditOptions, the
// pairs listed are the ones its counter counts.
Result<nlohmann::json> AdminStats(const std::string& url, std::chrono::seconds regeneration_window,
                                  int regeneration_limit = 20,
                                  const std::map<std::string, std::chrono::seconds>& window_by_flow = {});
Result<nlohmann::json> AdminReapPreview(const std::string& url, std::chrono::seconds retention);

}  // namespace phasekey::admin

#endif  // PHASEKEY_SRC_ADMIN_KEY_ADMIN_H_
