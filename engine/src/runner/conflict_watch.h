// Keys answered 409 (in progress) that their client never sent again: the
// client probably treated the 409 as final (docs/clients.md, mistake 2)
// instead of retrying the same key after a backoff.
//
// Kept in this process's memory, nothing is written anywhere: the runner
// tells the watch about every request a client sent (not re-drives), and a
// key it answered 409 is suspected once `silence` passes without this
// process seeing the key again. So the watch sees only this process's
// traffic: behind a load balancer that spreads one client's retries over
// several processes, a retry that reached another process looks like
// silence here (docs/operations.md). Suspects are found when the process
// answers its next request after the silence, not by a timer.
#ifndef PHASEKEY_SRC_RUNNER_CONFLICT_WATCH_H_
#define PHASEKEY_SRC_RUNNER_CONFLICT_WATCH_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "util/thread_annotations.h"

namespace phasekey::runner {

class ConflictWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // A key answered 409 at `last_conflict` and not seen since.
  struct Suspect {
    std::string flow, account, key;
    std::int64_t key_id = 0;  // the key row's id
    Clock::time_point last_conflict;
    std::string trace_id;  // the key's stored trace id, as given to Saw() ("" when none)
  };

  // `silence`: how long after its last 409 a key must stay unseen. At most
  // `capacity` keys are watched; past it the oldest is forgotten (not
  // suspected) and counted in forgotten().
  ConflictWatch(Clock::duration silence, std::size_t capacity);

  // A client's request for (account, key) of `flow`, which arrived at
  // `arrived`, was answered at `now`; `conflict`: with a 409. A request that
  // arrived after the key's last 409 is the client coming back; one that
  // arrived before (the request holding the key, finishing) is not. Returns
  // the keys whose silence has passed by `now`, each once, oldest first.
  // `trace_id`: the key's stored trace id, kept for its suspect's log line.
  std::vector<Suspect> Saw(const std::string& flow, const std::string& account, const std::string& key,
                           std::int64_t key_id, bool conflict, Clock::time_point arrived, Clock::time_point now,
                           std::string trace_id = {}) EXCLUDES(mu_);

  std::size_t watched() const EXCLUDES(mu_);
  std::size_t forgotten() const EXCLUDES(mu_);

 private:
  using Id = std::pair<std::string, std::string>;  // account, key
  struct Entry {
    std::string flow;
    std::int64_t key_id = 0;
    Clock::time_point at;
    std::string trace_id;
  };
  void Forget(std::map<Id, Entry>::iterator it) REQUIRES(mu_);

  const Clock::duration silence_;
  const std::size_t capacity_;
  mutable Mutex mu_;
  std::map<Id, Entry> by_key_ GUARDED_BY(mu_);
  std::set<std::pair<Clock::time_point, Id>> by_time_ GUARDED_BY(mu_);  // the same keys, oldest first
  std::size_t forgotten_ GUARDED_BY(mu_) = 0;
};

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_CONFLICT_WATCH_H_
