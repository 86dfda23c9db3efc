#include "pg/operator_support.h"

#include <pqxx/pqxx>

#include "pg/statements.h"
#include "phasekey/runner.h"
#include "sql/sql_catalog.h"
#include "util/utf8.h"

namespace phasekey::pg {

int BucketOf(pqxx::transaction_base& tx, int buckets, const std::string& account, Status* error) {
  pqxx::result r = pg::Exec(tx, sql::q::DeploymentBuckets);
  // None stored: no service has opened the database, so any key in it was
  // written by hand, with the default count.
  const int stored = r.empty() ? 16 : r[0][0].as<int>();
  if (buckets != 0 && buckets != stored) {
    *error =
        Status::FailedPrecondition("--buckets is " + std::to_string(buckets) + " but this database was set up with " +
                                   std::to_string(stored) + "; leave it out");
    return 0;
  }
  return AccountBucket(account, stored);
}

std::string ActorProblem(const std::string& name) {
  if (!util::ValidUtf8(name)) return "the actor's name is not valid UTF-8";
  const std::size_t n = util::Utf8Characters(name);
  if (n == 0 || n > 100) return "the actor's name must have 1 to 100 characters (has " + std::to_string(n) + ")";
  return "";
}

}  // namespace phasekey::pg
