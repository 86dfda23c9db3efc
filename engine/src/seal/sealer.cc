#include "seal/sealer.h"

#include <fmt/format.h>

#include <functional>
#include <stdexcept>

#include <pqxx/pqxx>

#include "pg/statements.h"
#include "util/hex.h"

namespace phasekey::seal {
namespace {

// At most this many cached keys (about 150 bytes each); past it the cache
// starts again empty rather than growing with the number of accounts.
constexpr std::size_t kMaxCached = 100000;

constexpr std::string_view kCheckPlaintext = "phasekey key-encryption key check";

std::string KeyBytes(const Key& k) { return std::string(reinterpret_cast<const char*>(k.data()), k.size()); }

std::optional<Key> ToKey(const std::optional<std::string>& bytes) {
  if (!bytes || bytes->size() != Key().size()) return std::nullopt;
  Key k;
  std::copy(bytes->begin(), bytes->end(), k.begin());
  return k;
}

std::string WrapAad(int bucket, const std::string& account) {
  return fmt::format("phasekey:data-key:{}:{}", bucket, account);
}

}  // namespace

Sealer::Sealer(Keyring ring, std::chrono::seconds cache) : ring_(std::move(ring)), cache_(cache) {}

std::string Sealer::CheckValue(const std::string& id, const Key& kek) {
  return Seal(kek, "phasekey:kek-check:" + id, kCheckPlaintext);
}

bool Sealer::Checks(const std::string& id, const Key& kek, std::string_view check_value) {
  const auto opened = Open(kek, "phasekey:kek-check:" + id, check_value);
  return opened && *opened == kCheckPlaintext;
}

Status Sealer::Verify(pqxx::transaction_base& tx) {
  bool current_recorded = false;
  for (const auto& row : pg::Exec(tx, sql::q::SealerKeks)) {
    const std::string id = row[0].as<std::string>();
    const Key* kek = ring_.Find(id);
    if (kek == nullptr) {
      if (!row[2].as<bool>()) continue;  // no live data key is wrapped by it
      if (!enabled()) {
        return Status::FailedPrecondition(fmt::format(
            "stored data keys are wrapped by key-encryption key '{}', and no key-encryption key is configured "
            "(encryption: kek_file or kek_command)",
            id));
      }
      return Status::FailedPrecondition(fmt::format(
          "stored data keys are wrapped by key-encryption key '{}', which the configured keys do not include", id));
    }
    if (!Checks(id, *kek, util::HexDecode(row[1].as<std::string>()))) {
      return Status::FailedPrecondition(
          fmt::format("key-encryption key '{}' does not match the one recorded under that id: wrong key", id));
    }
    current_recorded = current_recorded || id == ring_.current;
  }
  if (!enabled() || current_recorded) return Status::OK();
  // Checked before anything is written; another process may record the
  // same id at once, so check what was stored.
  const Key& current = *ring_.Find(ring_.current);
  pg::Exec(tx, sql::q::SealerKekRecord, ring_.current, util::HexEncode(CheckValue(ring_.current, current)));
  for (const auto& row : pg::Exec(tx, sql::q::SealerKeks)) {
    if (row[0].as<std::string>() == ring_.current &&
        !Checks(ring_.current, current, util::HexDecode(row[1].as<std::string>()))) {
      return Status::FailedPrecondition(fmt::format(
          "key-encryption key '{}' does not match the one recorded under that id: wrong key", ring_.current));
    }
  }
  return Status::OK();
}

std::string Sealer::AccountSlot(int bucket, const std::string& account) {
  return fmt::format("a{}:{}", bucket, account);
}

std::string Sealer::IdSlot(int bucket, std::int64_t id) { return fmt::format("i{}:{}", bucket, id); }

void Sealer::Remember(int bucket, const std::string& account, const DataKey& key) {
  MutexLock lock(&mu_);
  if (cached_.size() >= kMaxCached) cached_.clear();
  const auto now = std::chrono::steady_clock::now();
  cached_[IdSlot(bucket, key.id)] = Cached{key, account, now};
}

std::string Sealer::Wrap(const Key& kek, int bucket, const std::string& account, const Key& data_key) const {
  return Seal(kek, WrapAad(bucket, account), KeyBytes(data_key));
}

std::optional<Key> Sealer::Unwrap(const Key& kek, int bucket, const std::string& account,
                                  std::string_view wrapped) const {
  return ToKey(Open(kek, WrapAad(bucket, account), wrapped));
}

std::optional<Key> Sealer::UnwrapStored(int bucket, const std::string& account, const std::string& kek_id,
                                        const std::string& wrapped_hex) const {
  const Key* kek = ring_.Find(kek_id);
  if (kek == nullptr) {
    throw std::runtime_error(
        fmt::format("a data key of bucket {} is wrapped by key-encryption key '{}', which this process does not have",
                    bucket, kek_id));
  }
  auto key = Unwrap(*kek, bucket, account, util::HexDecode(wrapped_hex));
  if (!key) {
    throw std::runtime_error(
        fmt::format("a data key of bucket {} does not open with key-encryption key '{}' (wrong key or damaged row)",
                    bucket, kek_id));
  }
  return key;
}

DataKey Sealer::LiveKey(pqxx::transaction_base& tx, int bucket, const std::string& account) {
  {
    MutexLock lock(&mu_);
    auto it = cached_.find(AccountSlot(bucket, account));
    if (it != cached_.end() && std::chrono::steady_clock::now() - it->second.at < cache_) return it->second.key;
  }
  DataKey key;
  for (int round = 0; round < 2 && key.id == 0; ++round) {
    pqxx::result r = pg::Exec(tx, sql::q::SealerDataKeyLive, bucket, account);
    if (!r.empty()) {
      key.id = r[0][0].as<std::int64_t>();
      key.key = *UnwrapStored(bucket, account, r[0][1].as<std::string>(), r[0][2].as<std::string>());
      break;
    }
    const Key fresh = RandomKey();
    const Key& kek = *ring_.Find(ring_.current);
    r = pg::Exec(tx, sql::q::SealerDataKeyCreate, bucket, account, ring_.current,
                 util::HexEncode(Wrap(kek, bucket, account, fresh)));
    if (!r.empty()) key = DataKey{r[0][0].as<std::int64_t>(), fresh};
  }
  if (key.id == 0) throw std::runtime_error("could not read or create the account's data key");
  Remember(bucket, account, key);
  MutexLock lock(&mu_);
  cached_[AccountSlot(bucket, account)] = Cached{key, account, std::chrono::steady_clock::now()};
  return key;
}

std::optional<DataKey> Sealer::CachedLiveKey(int bucket, const std::string& account) const {
  MutexLock lock(&mu_);
  auto it = cached_.find(AccountSlot(bucket, account));
  if (it == cached_.end()) return std::nullopt;
  return it->second.key;
}

bool Sealer::LiveKeyFresh(int bucket, const std::string& account) const {
  MutexLock lock(&mu_);
  auto it = cached_.find(AccountSlot(bucket, account));
  return it != cached_.end() && std::chrono::steady_clock::now() - it->second.at < cache_;
}

std::optional<Key> Sealer::KeyById(pqxx::transaction_base& tx, int bucket, std::int64_t id) {
  {
    MutexLock lock(&mu_);
    auto it = cached_.find(IdSlot(bucket, id));
    if (it != cached_.end() && std::chrono::steady_clock::now() - it->second.at < cache_) return it->second.key.key;
  }
  pqxx::result r = pg::Exec(tx, sql::q::SealerDataKeyGet, bucket, id);
  if (r.empty()) throw std::runtime_error(fmt::format("data key {} of bucket {} does not exist", id, bucket));
  if (r[0][2].is_null()) return std::nullopt;  // erased
  const std::string account = r[0][0].as<std::string>();
  auto key = UnwrapStored(bucket, account, r[0][1].as<std::string>(), r[0][2].as<std::string>());
  Remember(bucket, account, DataKey{id, *key});
  return key;
}

void Sealer::Forget(const std::string& account) {
  MutexLock lock(&mu_);
  for (auto it = cached_.begin(); it != cached_.end();) {
    it = it->second.account == account ? cached_.erase(it) : std::next(it);
  }
}

Result<std::shared_ptr<Sealer>> OpenSealer(
    const EncryptionOptions& options,
    const std::function<Status(const std::function<void(pqxx::transaction_base&)>&)>& run) {
  auto sealer = std::make_shared<Sealer>();
  if (options.enabled()) {
    auto ring = LoadKeyring(options);
    if (!ring) return ring.error();
    sealer = std::make_shared<Sealer>(std::move(*ring), options.data_key_cache);
  }
  Status verified;
  Status s = run([&](pqxx::transaction_base& tx) { verified = sealer->Verify(tx); });
  if (!s.ok()) return s;
  if (!verified.ok()) return verified;
  return sealer;
}

}  // namespace phasekey::seal
