// Timed events of a chaos run, and the unavailability each one caused.
//
// An event is a shell command run at a given fraction of the run (the
// failover test: `tests/ha/formation.sh switchover` at 0.15, `... kill-primary`
// at 0.5). The events run one after the other on one thread, each waited
// for; a command that exits non-zero fails the run.
//
// The clients log every attempt's end (ChaosAttemptLog): failed (a network
// error, 409, 503 or a retryable 500: the client will retry) or answered.
// An event's unavailability window is the longest stretch without an
// answered attempt that contains at least one failed attempt, among those
// that overlap the event (from its start to 30 s after its command ended):
// from the first failure in it to the first answer after it.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_EVENTS_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_EVENTS_H_

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "phasekey/status.h"

namespace ride_booking {

using ChaosClock = std::chrono::steady_clock;

struct ChaosEvent {
  double at = 0;        // fraction of the run, in [0, 1)
  std::string command;  // run with /bin/sh -c; its output goes to our stderr
};

// Parses "FRACTION:COMMAND", e.g. "0.5:tests/ha/formation.sh kill-primary".
phasekey::Result<ChaosEvent> ParseChaosEvent(const std::string& spec);

// Every client attempt's end time and outcome. Thread-safe.
class ChaosAttemptLog {
 public:
  struct Attempt {
    ChaosClock::time_point at;
    bool failed = false;  // the client will retry it
  };
  void Record(bool failed);
  std::vector<Attempt> Attempts() const;  // in the order recorded

 private:
  mutable std::mutex mu_;
  std::vector<Attempt> attempts_;  // GUARDED_BY(mu_)
};

// What one event did.
struct ChaosEventResult {
  ChaosEvent event;
  bool ran = false;  // false: the run ended (or was stopped) before its moment
  int exit_code = 0;
  ChaosClock::time_point started, ended;
  // The unavailability window (see above); has_window false if no attempt
  // failed around the event.
  bool has_window = false;
  ChaosClock::time_point window_start, window_end;
  long long failed_in_window = 0;  // failed attempts inside the window
};

// Runs `events` (sorted by `at`) when `fraction()` reaches each one's
// moment, until done or until `stop` is set. Blocks; returns one result per
// event. Children are tied to the calling thread (process.h). `on_event`
// (if set) is told as each command starts (ended false) and ends (ended
// true, with its exit code): the run's history records them as faults.
std::vector<ChaosEventResult> RunChaosEvents(
    std::vector<ChaosEvent> events, const std::function<double()>& fraction, const std::atomic<bool>& stop,
    const std::function<void(const ChaosEvent&, bool ended, int exit_code)>& on_event = {});

// Fills each ran result's window from the clients' attempts.
void MeasureWindows(const std::vector<ChaosAttemptLog::Attempt>& attempts, std::vector<ChaosEventResult>* results);

// One line per event (its command's time, its window, its failed attempts),
// then "chaos: events: ..." saying whether every event ran and succeeded.
// Returns true if they all did.
bool PrintChaosEvents(std::FILE* out, const std::vector<ChaosEventResult>& results, ChaosClock::time_point run_start);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_EVENTS_H_
