// Key rows written straight into phasekey.idempotency_keys, for tests of the
// operator's tools, which read and change keys but run no flow.
#ifndef PHASEKEY_TESTS_SUPPORT_KEY_ROWS_H_
#define PHASEKEY_TESTS_SUPPORT_KEY_ROWS_H_

#include <string>

#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey::testing {

// `n` dead keys of `account` ("<account>-1" .. "<account>-n"), of flow
// create_ride at ride_created, last error "failed" of class unclassified,
// in the account's bucket of `buckets`.
inline void InsertDeadKeys(TestDatabase& db, const std::string& account, long long n, int buckets = 16) {
  db.Exec(
      "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, request_path, "
      "request_body, request_fingerprint, recovery_point, state, error_class, last_error) "
      "SELECT '" +
      account + "', '" + account + "-' || i, " + std::to_string(AccountBucket(account, buckets)) +
      ", 'create_ride', 'POST', '/rides', '{}', decode(repeat('00', 32), 'hex'), 'ride_created', 'dead', "
      "'unclassified', 'failed' FROM generate_series(1, " +
      std::to_string(n) + ") AS i");
}

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_KEY_ROWS_H_
