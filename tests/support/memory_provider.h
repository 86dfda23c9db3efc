// MemoryProvider: a keyed payment API in memory, for runner tests against
// a real PostgreSQL (tests/pg): it replays a key's first answer while it
// remembers the key, forgets keys on request (its retention passing), and
// can look a payment up by the provider key for ever. Every call counted.
// Thread-safe. Header-only.
#ifndef PHASEKEY_TESTS_SUPPORT_MEMORY_PROVIDER_H_
#define PHASEKEY_TESTS_SUPPORT_MEMORY_PROVIDER_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace phasekey::testing {

class MemoryProvider {
 public:
  // Charges under `key`: the stored answer while the key is remembered,
  // otherwise a new payment.
  std::string Charge(const std::string& key) {
    std::lock_guard lock(mu_);
    ++posts_;
    if (auto it = remembered_.find(key); it != remembered_.end()) return it->second;
    const std::string id = "pay_" + std::to_string(payments_.size() + 1);
    payments_.emplace(key, id);
    remembered_[key] = id;
    return id;
  }
  // The first payment made under `key`, remembered or not ("" if none).
  std::string Lookup(const std::string& key) {
    std::lock_guard lock(mu_);
    ++lookups_;
    auto it = payments_.find(key);
    return it == payments_.end() ? "" : it->second;
  }
  void ForgetKeys() {
    std::lock_guard lock(mu_);
    remembered_.clear();
  }
  int posts() {
    std::lock_guard lock(mu_);
    return posts_;
  }
  int lookups() {
    std::lock_guard lock(mu_);
    return lookups_;
  }
  std::size_t payments() {
    std::lock_guard lock(mu_);
    return payments_.size();
  }

 private:
  std::mutex mu_;
  std::multimap<std::string, std::string> payments_;  // provider key -> payment id
  std::map<std::string, std::string> remembered_;
  int posts_ = 0, lookups_ = 0;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_MEMORY_PROVIDER_H_
