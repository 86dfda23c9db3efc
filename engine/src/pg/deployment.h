// The deployment's fixed settings, kept in the database (phasekey.deployment,
// sql/queries/deployment.sql) so that every service, worker, reaper and
// operator command of a deployment agrees on them.
#ifndef PHASEKEY_SRC_PG_DEPLOYMENT_H_
#define PHASEKEY_SRC_PG_DEPLOYMENT_H_

#include <pqxx/transaction>

#include <string_view>

#include "pg/pool.h"
#include "phasekey/status.h"

namespace phasekey::pg {

// The bucket count when nothing is stored and nothing is asked for.
inline constexpr int kDefaultBuckets = 16;

// The deployment's bucket count. `wanted` 0: the stored count, or
// kDefaultBuckets recorded when none is stored yet. Otherwise `wanted` is
// recorded when none is stored, and FailedPrecondition (a one-line message
// naming `who`) when the stored count differs. InvalidArgument outside
// 0..32767.
Result<int> ResolveBuckets(Pool& pool, int wanted, std::string_view who);

// The same inside an open transaction on a connection with the engine's
// statements prepared (throws libpqxx exceptions like any statement).
Result<int> ResolveBucketsInTx(pqxx::transaction_base& tx, int wanted, std::string_view who);

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_DEPLOYMENT_H_
