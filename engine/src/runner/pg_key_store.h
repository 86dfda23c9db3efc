// The KeyStore over PostgreSQL: each KeyTx method runs its named query of
// sql/queries/key_store.sql in a transaction of the pool (KeyClaim with the
// transaction's BEGIN when that is pending, KeyMove and KeyFinish with its
// COMMIT), and Transact is Pool::Transact.
#ifndef PHASEKEY_SRC_RUNNER_PG_KEY_STORE_H_
#define PHASEKEY_SRC_RUNNER_PG_KEY_STORE_H_

#include <memory>

#include "pg/pool.h"
#include "runner/key_store.h"
#include "seal/sealer.h"

namespace phasekey::runner {

// The store owns `pool` (not null).
// `sealer` (not null; disabled when bodies are stored as they are) seals
// and opens the rows' bodies (docs/data-protection.md).
// The process's sealer for `options` (seal::OpenSealer), verified in a
// transaction of `pool`; says once on stderr when bodies will be stored as
// they are.
Result<std::shared_ptr<seal::Sealer>> OpenSealer(const EncryptionOptions& options, pg::Pool& pool);

std::unique_ptr<KeyStore> NewPgKeyStore(std::unique_ptr<pg::Pool> pool, std::shared_ptr<seal::Sealer> sealer);

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_PG_KEY_STORE_H_
