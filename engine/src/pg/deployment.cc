#include "pg/deployment.h"

#include "pg/statements.h"
#include "phasekey/migrate.h"

#include <fmt/format.h>

#include <optional>

namespace phasekey::pg {

Result<int> ResolveBucketsInTx(pqxx::transaction_base& tx, int wanted, std::string_view who) {
  if (wanted < 0 || wanted > 32767) {
    return Status::InvalidArgument(fmt::format("{}: buckets must be in 1..32767 (0: the stored count)", who));
  }
  pg::Exec0(tx, sql::q::DeploymentRecordBuckets, wanted == 0 ? kDefaultBuckets : wanted);
  const int stored = pg::Exec1(tx, sql::q::DeploymentBuckets)[0].as<int>();
  if (wanted != 0 && wanted != stored) {
    return Status::FailedPrecondition(fmt::format(
        "{}: buckets is {} but this database was set up with {} (phasekey.deployment); use {} or leave it unset", who,
        wanted, stored, stored));
  }
  return stored;
}

Result<int> ResolveBuckets(Pool& pool, int wanted, std::string_view who) {
  std::optional<Result<int>> resolved;
  Status s = pool.Transact([&](pqxx::transaction_base& tx) { resolved.emplace(ResolveBucketsInTx(tx, wanted, who)); });
  if (!s.ok()) return s;
  return *resolved;
}

}  // namespace phasekey::pg

namespace phasekey {

Result<int> DeploymentBuckets(std::string_view database_url, int buckets) {
  DatabaseOptions o;
  o.url = std::string(database_url);
  o.pool_size = 1;
  auto pool = pg::Pool::Open(o);
  if (!pool) return pool.error();
  return pg::ResolveBuckets(**pool, buckets, "buckets");
}

}  // namespace phasekey
