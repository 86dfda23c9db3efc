// What every operator call shares, the core's (erasure, KEK rotation) and
// the tools' (keys, stats, the console): the account's bucket under the
// deployment's count, and the rule for an audited actor's name.
#ifndef PHASEKEY_SRC_PG_OPERATOR_SUPPORT_H_
#define PHASEKEY_SRC_PG_OPERATOR_SUPPORT_H_

#include <string>

#include <pqxx/transaction_base>

#include "phasekey/status.h"

namespace phasekey::pg {

// The bucket of `account` under the deployment's bucket count
// (phasekey.deployment; 16 when none is stored). `buckets` 0 trusts the
// database; another value must match it, else *error is set
// (FailedPrecondition) and 0 returned. Throws libpqxx errors.
int BucketOf(pqxx::transaction_base& tx, int buckets, const std::string& account, Status* error);

// Why `name` cannot name an actor ("" when it can): empty, more than 100
// characters, or not valid UTF-8.
std::string ActorProblem(const std::string& name);

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_OPERATOR_SUPPORT_H_
