// The console's own queries (sql/queries/console_queries.sql), one function
// each; the rest of what it shows and does comes from admin/key_admin.h, as
// the CLI's does. Each call opens its own connection; failures are Status.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_QUERIES_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_QUERIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admin/key_admin.h"
#include "phasekey/status.h"

namespace phasekey::console {

// Where a page of keys starts: after the key at (bucket, account,
// idempotency key), in primary-key order. The default is before the first
// key.
struct KeysCursor {
  int bucket = -1;
  std::string account;
  std::string key;
};

struct KeysQuery {
  admin::KeyFilter filter;  // its limit is ignored: `limit` is the page's
  KeysCursor after;
  int limit = 50;
};

// Rows as objects: bucket, id, account, key, flow, state, recovery_point,
// attempts, age_s, last_error, error_class (null: none). InvalidArgument
// (admin::FilterProblem) before anything is run.
Result<nlohmann::json> ConsoleKeysPage(const std::string& url, const KeysQuery& query);
// Stuck, dead and parked keys, oldest first (at most `limit`), with `why`.
Result<nlohmann::json> ConsoleAttention(const std::string& url, int limit);
// {stuck, dead, needs_operator, due_redrives, oldest_unfinished_age_s}.
Result<nlohmann::json> ConsoleSummary(const std::string& url);
// Rows {flow, recovery_point, state, count}.
Result<nlohmann::json> ConsolePhaseCounts(const std::string& url);

// Rows {at, actor, action, succeeded, outcome}, newest first.
Result<nlohmann::json> ConsoleAuditForKey(const std::string& url, const std::string& account, const std::string& key);

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_QUERIES_H_
