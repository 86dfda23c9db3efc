// Batch actions of the operator: `keys retry/release --all-matching` and the
// console's batch form. An operator names keys by a filter (KeyFilter),
// sees how many match (the dry run, AdminBatchCount), and acts by confirming
// that count (AdminBatchRun): the action is refused, nothing changed, when
// the keys that match at that moment are not as many (keys move while the
// operator reads). Acting is one transaction with one audit row.
#ifndef PHASEKEY_TOOLS_SRC_ADMIN_KEY_BATCH_H_
#define PHASEKEY_TOOLS_SRC_ADMIN_KEY_BATCH_H_

#include <string>
#include <vector>

#include "admin/key_admin.h"

namespace phasekey::admin {

// The most keys one batch acts on. A batch is one transaction that holds
// the row lock of every key it changes until it commits; the re-drive
// worker and the keys' clients wait for those rows meanwhile. More keys
// take several batches, each with a narrower filter (an account, a flow,
// --older-than) or the same one again.
inline constexpr long long kMaxBatchKeys = 10000;

enum class BatchAction {
  kRetry,          // the dead keys that match back to re-drive (AdminKeyRetry's rule)
  kRetryVerified,  // also the parked ones (needs_operator), verified at the provider
  kRelease,        // free the leases that expired, and the live ones of the holders named
};

struct Batch {
  BatchAction action = BatchAction::kRetry;
  KeyFilter filter;  // limit is ignored: a batch takes every key that matches
  // kRelease: owner tokens (UUIDs) whose live leases the operator means to
  // free as well. No other live lease is ever freed: its holder may be
  // calling a provider right now.
  std::vector<std::string> owner_tokens;
};

// The audit trail's name of the action: "batch_retry",
// "batch_retry_verified" or "batch_release".
const char* BatchActionName(BatchAction action);
// Why `batch` cannot run ("" when it can): FilterProblem, an owner token
// that is not a UUID, or owner tokens given to a retry.
std::string BatchProblem(const Batch& batch);

// Why `count` keys are too many for one batch, in one line.
std::string TooManyKeys(long long count);

// The dry run: how many keys the batch would change now (it may be more
// than kMaxBatchKeys: the operator then narrows the filter). Reads only;
// nothing is audited. InvalidArgument (BatchProblem) before anything runs.
Result<long long> AdminBatchCount(const std::string& url, int buckets, const Batch& batch);

// Acts on every key the batch matches when, inside the acting transaction,
// they are exactly `confirmed_count`; returns that count. One transaction
// for the keys and their one audit row (action BatchActionName; account the
// filter's or "*", key "*"; outcome a JSON object with the filter, the
// owner tokens named and the count). When the count differs, nothing of the
// action is kept and FailedPrecondition says how many match now; the
// refusal is audited (its own row, its outcome with both counts). As the
// single actions, an action whose row cannot be written is not done (the
// database's failure). InvalidArgument (BatchProblem, an actor that is not
// valid, or a confirmed count above kMaxBatchKeys) before anything runs.
Result<long long> AdminBatchRun(const std::string& url, int buckets, const Batch& batch, long long confirmed_count,
                                const Actor& actor);

}  // namespace phasekey::admin

#endif  // PHASEKEY_TOOLS_SRC_ADMIN_KEY_BATCH_H_
