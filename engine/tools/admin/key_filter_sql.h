// The operator's key filter (admin::KeyFilter) as the parameters $1-$10
// that the filtered queries of sql/queries/key_admin.sql and
// console_queries.sql share. Private to the operator tools.
#ifndef PHASEKEY_TOOLS_SRC_ADMIN_KEY_FILTER_SQL_H_
#define PHASEKEY_TOOLS_SRC_ADMIN_KEY_FILTER_SQL_H_

#include <optional>

#include <pqxx/result>
#include <pqxx/transaction_base>

#include "admin/key_admin.h"
#include "pg/statements.h"

namespace phasekey::admin {

// The bucket of the filter's account under the deployment's count
// (`buckets` as for BucketOf: 0 trusts the database), so that the account's
// keys are one range of the primary key; nullopt without an account. Sets
// *error as BucketOf does.
inline std::optional<int> FilterBucket(pqxx::transaction_base& tx, const KeyFilter& f, Status* error, int buckets = 0) {
  if (!f.account) return std::nullopt;
  return BucketOf(tx, buckets, *f.account, error);
}

// Runs `query` with the filter as $1-$10 and `extra` as $11 on.
template <std::size_t N, class... Extra>
pqxx::result ExecFiltered(pqxx::transaction_base& tx, sql::QueryRef<N> query, const KeyFilter& f,
                          std::optional<int> bucket, const Extra&... extra) {
  std::optional<double> newer_than;
  if (f.newer_than) newer_than = static_cast<double>(f.newer_than->count());
  return pg::Exec(tx, query, f.account, bucket, f.flow, f.state, f.recovery_point, f.error_class, f.stuck,
                  f.stuck_attempts, static_cast<double>(f.older_than.count()), newer_than, extra...);
}

}  // namespace phasekey::admin

#endif  // PHASEKEY_TOOLS_SRC_ADMIN_KEY_FILTER_SQL_H_
