// The stored responses of finished keys, opened: what a replay of each
// would answer. For tools that check what was stored against what clients
// were answered (the ride example's chaos report), whether the bodies are
// sealed (docs/data-protection.md) or not.
//
// Not audited, and not for showing to people: an operator who needs to see
// a key's bodies uses `phasekey keys show --reveal`, which masks them and
// writes an audit row.
#ifndef PHASEKEY_TOOLS_STORED_RESPONSES_H_
#define PHASEKEY_TOOLS_STORED_RESPONSES_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "phasekey/data_protection.h"
#include "phasekey/database_options.h"
#include "phasekey/status.h"

namespace phasekey {

// An account and an idempotency key.
using AccountKey = std::pair<std::string, std::string>;

// The stored response body of each of `keys` that has one, opened with
// `encryption`'s key-encryption keys when it is sealed (verified against
// the database first); keys without a stored response, unknown keys and
// keys of erased accounts are left out. One connection, one transaction,
// writes nothing. FailedPrecondition when a key is sealed and `encryption` has
// no source, its keys do not match the database, or a body does not open;
// the database's failure otherwise.
Result<std::map<AccountKey, std::string>> ReadStoredResponses(const DatabaseOptions& database,
                                                              const EncryptionOptions& encryption,
                                                              const std::vector<AccountKey>& keys);

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_STORED_RESPONSES_H_
