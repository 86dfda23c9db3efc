// Data protection: what phasekey stores of a request is sealed at rest,
// kept no longer than needed, and erasable per account
// (docs/data-protection.md).
//
// Envelope encryption. Each account has a data key (256 random bits) that
// seals, with AES-256-GCM, the request body, the response body and the
// values of the foreign outcomes stored on its keys (statuses, headers,
// recovery points and the fingerprint stay clear: the fingerprint is a plain
// SHA-256, so a reused key is still detected without decrypting). Data keys
// are stored wrapped (AES-256-GCM) by a key-encryption key (KEK) that the
// operator supplies and phasekey never stores, named by an id so that it
// can be rotated while services run:
//
//   1. add the new KEK as a second line (accepted, not yet current) and roll
//      it out to every process;
//   2. move it to the first line (current: new data keys are wrapped by it)
//      and roll out again;
//   3. run RotateKeyEncryptionKey (`phasekey keys rotate-kek`): every data
//      key still wrapped by an older KEK is wrapped by the current one;
//   4. remove the old line.
//
// Erasure (EraseAccount) destroys the account's data keys: every body
// sealed under them is unreadable at once, wherever a copy of it lies.
#ifndef PHASEKEY_DATA_PROTECTION_H_
#define PHASEKEY_DATA_PROTECTION_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "phasekey/database_options.h"
#include "phasekey/status.h"

namespace phasekey {

// Where the key-encryption keys come from; every default is explained. Set
// neither source and bodies are stored as they are (the runner says so once
// at start-up).
struct EncryptionOptions {
  // A file of key-encryption keys, one per line: "<id> <64 hex digits>"
  // (an id of 1 to 64 characters [A-Za-z0-9._-], then 32 bytes of key).
  // The first line is the current KEK, which wraps new data keys; later
  // lines are older KEKs, still accepted to unwrap data keys they wrapped
  // (during a rotation). Blank lines and lines starting with '#' are
  // skipped. The file must be a regular file readable by its owner alone
  // (0600 or 0400): open refuses anything looser.
  std::string kek_file;
  // Instead of kek_file: a command run with /bin/sh -c whose standard
  // output has the same format, so a KMS or Vault can stand behind it (for
  // example `vault kv get -field=keks secret/phasekey`). Run once, when the
  // runner (or the operator command) opens; a non-zero exit is an error.
  std::string kek_command;
  // How long a process keeps an account's unwrapped data key in memory
  // after reading it from the database. One minute: a busy account costs
  // one read a minute. Erasure does not wait for it: a key row of an erased
  // account is refused whatever the cache holds, and the claim of a new
  // key checks, in its own statement, that the cached data key was not
  // destroyed meanwhile (it then claims again under a new one).
  std::chrono::seconds data_key_cache{60};

  // Whether a source is set.
  bool enabled() const { return !kek_file.empty() || !kek_command.empty(); }
};

// What EraseAccount did.
struct ErasureReport {
  std::size_t data_keys_destroyed = 0;  // the account's data keys (0 when it never had one)
  std::size_t keys_erased = 0;          // key rows whose bodies were dropped
  std::size_t keys_stopped = 0;         // unfinished keys parked in needs_operator
};

// Erases `account`: destroys its data keys, drops the bodies stored on its
// keys (sealed or not; the fingerprints, recovery points, provider keys'
// stable ids and response statuses stay), marks each key erased, and parks
// its unfinished keys in needs_operator (a provider call may be in flight;
// nothing is sent again), all in one transaction with an audit row (action
// "erase", by `actor`, 1 to 100 characters). A later request with an
// erased key is answered Reply::Kind::kErased (HTTP 410). Requests that
// arrive afterwards are new and stored under a new data key. Idempotent: a
// second call finds nothing more to do and is audited too.
// InvalidArgument for an empty account or a bad actor; the database's
// failure otherwise, with nothing changed.
Result<ErasureReport> EraseAccount(const DatabaseOptions& database, const std::string& account,
                                   const std::string& actor);

// What RotateKeyEncryptionKey did.
struct RotationReport {
  std::string current_kek;                // the id every live data key is now wrapped by
  std::size_t rewrapped = 0;              // data keys wrapped again
  std::vector<std::string> retired_keks;  // ids no data key is wrapped by any more
};

// Wraps every live data key still wrapped by another KEK with the current
// one (the first of `encryption`'s keys), in batches, each in its own
// transaction, while services keep running, then forgets the ids nothing is
// wrapped by any more (their lines can then be removed). The keys given must
// include every KEK a live data key is wrapped by. Audited (action
// "rotate_kek"). FailedPrecondition when a KEK is missing or does not match
// the one recorded; InvalidArgument for options without a source.
Result<RotationReport> RotateKeyEncryptionKey(const DatabaseOptions& database, const EncryptionOptions& encryption,
                                              const std::string& actor);

}  // namespace phasekey

#endif  // PHASEKEY_DATA_PROTECTION_H_
