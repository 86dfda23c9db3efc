// The KeyStore over PostgreSQL: each KeyTx method runs its named query of
// sql/queries/key_store.sql in a transaction of the pool (KeyClaim with the
// transaction's BEGIN when that is pending, KeyMove and KeyFinish with its
// COMMIT), and Transact is Pool::Transact.
#ifndef PHASEKEY_SRC_RUNNER_PG_KEY_STORE_H_
#define PHASEKEY_SRC_RUNNER_PG_KEY_STORE_H_

#include <memory>

#include "pg/pool.h"
#include "runner/key_store.h"

namespace phasekey::runner {

// The store owns `pool` (not null).
std::unique_ptr<KeyStore> NewPgKeyStore(std::unique_ptr<pg::Pool> pool);

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_PG_KEY_STORE_H_
