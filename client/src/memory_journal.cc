// The journal in memory (journal.h): a map under a mutex.
#include <map>
#include <mutex>

#include "phasekey/client/journal.h"

namespace phasekey::client {
namespace {

class MemoryJournal final : public Journal {
 public:
  IntentRecord CreateOrGet(const IntentRecord& record) override {
    std::lock_guard lock(mu_);
    auto [it, inserted] = intents_.try_emplace(record.name, record);
    if (inserted) order_.push_back(record.name);
    return it->second;
  }

  std::optional<IntentRecord> Find(const std::string& name) override {
    std::lock_guard lock(mu_);
    auto it = intents_.find(name);
    if (it == intents_.end()) return std::nullopt;
    return it->second;
  }

  void MarkDone(const std::string& name, const StoredAnswer& answer) override {
    std::lock_guard lock(mu_);
    auto it = intents_.find(name);
    if (it == intents_.end()) throw JournalError("no intent named '" + name + "'");
    if (!it->second.answer) it->second.answer = answer;
  }

  std::vector<IntentRecord> ListUnfinished() override {
    std::lock_guard lock(mu_);
    std::vector<IntentRecord> out;
    for (const std::string& name : order_) {
      const IntentRecord& r = intents_.at(name);
      if (!r.answer) out.push_back(r);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::map<std::string, IntentRecord> intents_;  // GUARDED_BY(mu_)
  std::vector<std::string> order_;               // GUARDED_BY(mu_): creation order
};

}  // namespace

std::shared_ptr<Journal> NewMemoryJournal() { return std::make_shared<MemoryJournal>(); }

}  // namespace phasekey::client
