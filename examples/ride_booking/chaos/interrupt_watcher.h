// InterruptWatcher: SIGINT and SIGTERM as an orderly stop of a chaos run.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_INTERRUPT_WATCHER_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_INTERRUPT_WATCHER_H_

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "phasekey/tools/stop_signals.h"

namespace ride_booking {

// Turns SIGINT and SIGTERM (Ctrl-C) into an orderly stop: while it lives,
// both are blocked in the creating thread and in every thread created after
// (so create it before the run's threads), and its own thread takes them and
// sets *stop. The run then ends early and every child is stopped
// and reaped. Restores the signal mask when destroyed.
class InterruptWatcher {
 public:
  explicit InterruptWatcher(std::atomic<bool>* stop) {
    signals_ = phasekey::BlockStopSignals(&old_mask_);
    thread_ = std::thread([this, stop] { Watch(stop); });
  }
  ~InterruptWatcher() {
    done_ = true;
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  bool interrupted() const { return interrupted_; }

 private:
  void Watch(std::atomic<bool>* stop) {
    const timespec tick{0, 100 * 1000 * 1000};
    while (!done_) {
      if (sigtimedwait(&signals_, nullptr, &tick) <= 0) continue;
      if (!interrupted_.exchange(true)) std::fprintf(stderr, "\nchaos: interrupted; stopping\n");
      *stop = true;
    }
  }

  sigset_t signals_, old_mask_;
  std::atomic<bool> done_{false}, interrupted_{false};
  std::thread thread_;
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_INTERRUPT_WATCHER_H_
