#include "runner/conflict_watch.h"

namespace phasekey::runner {

ConflictWatch::ConflictWatch(Clock::duration silence, std::size_t capacity) : silence_(silence), capacity_(capacity) {}

void ConflictWatch::Forget(std::map<Id, Entry>::iterator it) {
  by_time_.erase({it->second.at, it->first});
  by_key_.erase(it);
}

std::vector<ConflictWatch::Suspect> ConflictWatch::Saw(const std::string& flow, const std::string& account,
                                                       const std::string& key, std::int64_t key_id, bool conflict,
                                                       Clock::time_point arrived, Clock::time_point now,
                                                       std::string trace_id) {
  MutexLock lock(&mu_);
  Id id{account, key};
  auto it = by_key_.find(id);
  // The client came back after the 409: it did not give up.
  if (it != by_key_.end() && arrived >= it->second.at) {
    Forget(it);
    it = by_key_.end();
  }
  if (conflict && capacity_ > 0) {
    if (it != by_key_.end()) Forget(it);  // a 409 for an older request: the silence starts now
    if (by_key_.size() >= capacity_) {
      Forget(by_key_.find(by_time_.begin()->second));
      ++forgotten_;
    }
    by_time_.insert({now, id});
    by_key_.emplace(std::move(id), Entry{flow, key_id, now, std::move(trace_id)});
  }
  std::vector<Suspect> out;
  while (!by_time_.empty() && by_time_.begin()->first + silence_ <= now) {
    auto it = by_key_.find(by_time_.begin()->second);
    out.push_back(Suspect{it->second.flow, it->first.first, it->first.second, it->second.key_id, it->second.at,
                          it->second.trace_id});
    Forget(it);
  }
  return out;
}

std::size_t ConflictWatch::watched() const {
  MutexLock lock(&mu_);
  return by_key_.size();
}

std::size_t ConflictWatch::forgotten() const {
  MutexLock lock(&mu_);
  return forgotten_;
}

}  // namespace phasekey::runner
