// Sealer: the accounts' data keys and the key-encryption keys that wrap
// them (docs/data-protection.md). One per process that reads or writes key
// rows (the runner's store, the operator's tools); without
// EncryptionOptions it is disabled and everything is stored as it is.
//
// Data keys are cached unwrapped for EncryptionOptions::data_key_cache. A
// data key found erased is never cached.
//
// Thread-safety: all methods are thread-safe; the transaction a method
// takes is the caller's and used only during the call.
#ifndef PHASEKEY_SRC_SEAL_SEALER_H_
#define PHASEKEY_SRC_SEAL_SEALER_H_

#include <pqxx/transaction_base>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "phasekey/data_protection.h"
#include "phasekey/status.h"
#include "seal/aead.h"
#include "seal/keyring.h"
#include "util/thread_annotations.h"

namespace phasekey::seal {

// A data key at hand: its id (data_keys.id) and the key.
struct DataKey {
  std::int64_t id = 0;
  Key key{};
};

class Sealer {
 public:
  // A disabled sealer: bodies are stored as they are.
  Sealer() = default;
  // Seals with `ring`'s keys; Verify() before use.
  Sealer(Keyring ring, std::chrono::seconds cache);

  // Checks the keyring against the database: every key-encryption key a
  // live data key is wrapped by must be in it and match its recorded check
  // value; the current one's check value is recorded the first time. A
  // disabled sealer checks that no live data key needs a key.
  // FailedPrecondition with a one-line reason otherwise. Writes at most the
  // current key's check value.
  Status Verify(pqxx::transaction_base& tx);

  bool enabled() const { return !ring_.current.empty(); }
  const Keyring& keyring() const { return ring_; }

  // The account's live data key, created (wrapped by the current KEK) when
  // it has none; cached. Throws as the database does.
  DataKey LiveKey(pqxx::transaction_base& tx, int bucket, const std::string& account);
  // The account's live data key if cached, however old (a claim's first
  // statement cannot wait for a read; LiveKey() ran just before).
  std::optional<DataKey> CachedLiveKey(int bucket, const std::string& account) const;
  // Whether the account's live data key is cached and younger than the
  // cache's lifetime.
  bool LiveKeyFresh(int bucket, const std::string& account) const;
  // The data key `id` of `bucket`, or nullopt when it was erased. Throws
  // std::runtime_error when it is wrapped by a KEK this process lacks or
  // does not open (the keyring changed under a running process).
  std::optional<Key> KeyById(pqxx::transaction_base& tx, int bucket, std::int64_t id);
  // Forgets cached keys of `account` (after erasing it in this process).
  void Forget(const std::string& account);

  // Wraps and unwraps a data key of `account` under the KEK `kek`.
  std::string Wrap(const Key& kek, int bucket, const std::string& account, const Key& data_key) const;
  std::optional<Key> Unwrap(const Key& kek, int bucket, const std::string& account, std::string_view wrapped) const;
  // The check value of the KEK `id`.
  static std::string CheckValue(const std::string& id, const Key& kek);
  static bool Checks(const std::string& id, const Key& kek, std::string_view check_value);

 private:
  struct Cached {
    DataKey key;
    std::string account;
    std::chrono::steady_clock::time_point at;
  };
  static std::string AccountSlot(int bucket, const std::string& account);
  static std::string IdSlot(int bucket, std::int64_t id);
  void Remember(int bucket, const std::string& account, const DataKey& key) EXCLUDES(mu_);
  std::optional<Key> UnwrapStored(int bucket, const std::string& account, const std::string& kek_id,
                                  const std::string& wrapped_hex) const;

  Keyring ring_;
  std::chrono::seconds cache_{60};
  mutable Mutex mu_;
  // By AccountSlot (the live key) and by IdSlot (any key read by id).
  std::unordered_map<std::string, Cached> cached_ GUARDED_BY(mu_);
};

// Opens the process's sealer for `options` (LoadKeyring) and verifies it in
// a transaction `run` runs. Disabled when no source is set.
Result<std::shared_ptr<Sealer>> OpenSealer(
    const EncryptionOptions& options,
    const std::function<Status(const std::function<void(pqxx::transaction_base&)>&)>& run);

}  // namespace phasekey::seal

#endif  // PHASEKEY_SRC_SEAL_SEALER_H_
