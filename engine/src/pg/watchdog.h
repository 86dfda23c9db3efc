// Watchdog: enforces deadlines on blocking libpq calls.
//
// libpq has no per-call timeout and can block forever on a half-dead socket
// (a send error it hides until the next read, then poll(-1)). Before a call,
// the caller arms the watchdog with the connection's socket and a deadline;
// if the deadline passes first, the watchdog shuts the socket down
// (shutdown(SHUT_RDWR)), which makes the blocked call fail at once with a
// broken connection. Disarm() tells whether that happened.
//
// Thread-safety: all methods are thread-safe. One background thread serves
// the whole process. The caller must keep the socket open until Disarm()
// returns (so the watchdog never touches a recycled descriptor).
#ifndef PHASEKEY_SRC_PG_WATCHDOG_H_
#define PHASEKEY_SRC_PG_WATCHDOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <set>
#include <thread>

#include "util/thread_annotations.h"

namespace phasekey::pg {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;

  // Disarms on destruction. Movable, not copyable.
  class Guard {
   public:
    Guard(Watchdog* w, std::uint64_t id) : w_(w), id_(id) {}
    Guard(Guard&& o) noexcept : w_(o.w_), id_(o.id_) { o.w_ = nullptr; }
    Guard& operator=(Guard&&) = delete;
    ~Guard() { Disarm(); }
    // Returns true when the deadline fired (the socket was shut down).
    // Later calls return the same answer.
    bool Disarm();

   private:
    Watchdog* w_;
    std::uint64_t id_;
    bool fired_ = false;
  };

  // The process-wide watchdog.
  static Watchdog& Global();

  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  [[nodiscard]] Guard Arm(int fd, Clock::time_point deadline) EXCLUDES(mu_);

 private:
  struct Entry {
    int fd;
    Clock::time_point deadline;
  };
  bool Release(std::uint64_t id) EXCLUDES(mu_);
  void Loop() EXCLUDES(mu_);

  // How long the thread sleeps with nothing armed (see Loop()).
  static constexpr std::chrono::milliseconds kIdleTick{1000};

  Mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Entry> armed_ GUARDED_BY(mu_);
  std::set<std::uint64_t> fired_ GUARDED_BY(mu_);
  std::uint64_t next_id_ GUARDED_BY(mu_) = 1;
  // The deadline the thread sleeps until; Arm() wakes it only for an
  // earlier one, so most calls cost no thread wake-up.
  Clock::time_point sleeping_until_ GUARDED_BY(mu_) = Clock::time_point::max();
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_WATCHDOG_H_
