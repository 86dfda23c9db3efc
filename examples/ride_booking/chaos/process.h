// ChildProcess: a program the chaos demo runs (fake_gateway, the service, the
// worker), owned until it is reaped.
//
// The child stays in our process group, so a Ctrl-C at the terminal reaches
// it too (all three stop cleanly on SIGINT), and it gets SIGTERM when the
// thread that spawned it exits (Linux parent-death signal), so nothing
// outlives a chaos run that was itself killed. Hence: spawn from a thread
// that lives as long as the child should. Its stdout comes to us through a
// pipe (read by WaitListening); its stderr is appended to a log file.
//
// Thread-safety: none; guard a shared ChildProcess with a mutex.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PROCESS_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "phasekey/status.h"

namespace ride_booking {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with the given arguments, in our environment
  // plus `extra_env` ("NAME=value" each; these win over ours).
  // kFailedPrecondition if the pipe, the log file or fork fails; a program
  // that cannot be executed exits 127 (see it in the log file).
  static phasekey::Result<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv,
                                                               const std::string& stderr_log,
                                                               const std::vector<std::string>& extra_env = {});

  // Stop(kDefaultGrace).
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads stdout until a line "listening on HOST:PORT" and returns PORT.
  // kDeadlineExceeded after `timeout`; kFailedPrecondition if stdout ends
  // first (the child exited: its log file says why).
  phasekey::Result<int> WaitListening(std::chrono::milliseconds timeout);

  // Whether the child has exited (reaping it if so, without waiting); its
  // exit status (128 + signal if killed by one) goes to *exit_code when given.
  // True also once it was reaped by Kill or Stop.
  bool Exited(int* exit_code = nullptr);

  // SIGKILL now, then reap. Idempotent.
  void Kill();

  // SIGTERM, up to `grace` for the child to exit, then SIGKILL; reaps it.
  // Returns the exit status (128 + signal if killed by one), or -1 if the
  // child was already reaped. Idempotent.
  int Stop(std::chrono::milliseconds grace = kDefaultGrace);

  pid_t pid() const { return pid_; }

  static constexpr std::chrono::milliseconds kDefaultGrace{5000};

 private:
  ChildProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}
  // Waits for the child without blocking past `deadline`; true if reaped.
  bool ReapBy(std::chrono::steady_clock::time_point deadline, int* status);
  void CloseStdout();

  pid_t pid_;
  int stdout_fd_;
  std::string stdout_buffer_;  // read but not yet consumed
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PROCESS_H_
