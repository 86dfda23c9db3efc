#include "pg/watchdog.h"

#include <sys/socket.h>

namespace phasekey::pg {

bool Watchdog::Guard::Disarm() {
  if (w_ != nullptr) {
    fired_ = w_->Release(id_);
    w_ = nullptr;
  }
  return fired_;
}

Watchdog& Watchdog::Global() {
  static Watchdog instance;
  return instance;
}

Watchdog::Watchdog() : thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();  // (stop_ is checked after every wake-up)
}

Watchdog::Guard Watchdog::Arm(int fd, Clock::time_point deadline) {
  std::uint64_t id;
  bool wake = false;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    armed_.emplace(id, Entry{fd, deadline});
    wake = deadline < sleeping_until_;
  }
  if (wake) cv_.notify_all();
  return Guard(this, id);
}

bool Watchdog::Release(std::uint64_t id) {
  MutexLock lock(&mu_);
  if (armed_.erase(id) == 1) return false;
  return fired_.erase(id) == 1;
}

void Watchdog::Loop() {
  MutexLock lock(&mu_);
  while (!stop_) {
    auto earliest = Clock::time_point::max();
    for (const auto& [id, e] : armed_) earliest = std::min(earliest, e.deadline);
    // Idle, the thread still wakes every kIdleTick: a call armed meanwhile
    // with a deadline beyond the tick then needs no notify (Arm() wakes the
    // thread only for a deadline before its wake-up), so a busy pool does
    // not pay a thread wake-up per transaction.
    if (earliest == Clock::time_point::max()) earliest = Clock::now() + kIdleTick;
    sleeping_until_ = earliest;
    if (cv_.wait_until(lock.native(), earliest) != std::cv_status::timeout) continue;
    const auto now = Clock::now();
    for (auto it = armed_.begin(); it != armed_.end();) {
      if (it->second.deadline <= now) {
        ::shutdown(it->second.fd, SHUT_RDWR);
        fired_.insert(it->first);
        it = armed_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace phasekey::pg
