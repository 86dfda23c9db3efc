// Sharing one embedded server between processes: the start lock that makes
// initdb and launch one process's job at a time, and the reading of a
// running server's postmaster.pid so that a second process can connect to it
// instead of failing on the busy data directory. Not part of the public API.
//
// None of these functions throws (apart from std::bad_alloc).
#ifndef PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_SHARING_H_
#define PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_SHARING_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

#include "phasekey/status.h"

namespace phasekey::pg::embedded {

// The name of the start lock inside base_dir.
inline constexpr char kStartLockName[] = "start.lock";

// An exclusive flock(2) on "<base_dir>/start.lock", held while one process
// runs initdb and starts the server. The kernel drops it when the process
// dies, so a killed holder never leaves it behind. Move-only; released by the
// destructor.
class StartLock {
 public:
  // Creates the file if missing (0600, handed to `owner_uid`/`owner_gid`
  // when `chown_to_owner`) and waits up to `timeout` for the lock. Fails with
  // kDeadlineExceeded when another process holds it that long, and with
  // kFailedPrecondition when the file cannot be opened.
  static Result<StartLock> Acquire(const std::string& base_dir, bool chown_to_owner, uid_t owner_uid, gid_t owner_gid,
                                   std::chrono::milliseconds timeout);

  StartLock(StartLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StartLock& operator=(StartLock&& other) noexcept;
  StartLock(const StartLock&) = delete;
  StartLock& operator=(const StartLock&) = delete;
  ~StartLock();

 private:
  explicit StartLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// A postmaster that holds a data directory, as its postmaster.pid says.
struct RunningServer {
  pid_t pid = 0;
  int port = 0;
};

// Waits up to `timeout` for the postmaster named in "<data_dir>/postmaster.pid"
// to report itself ready (line 8 of the file). Returns it once it is ready;
// nullopt at once when there is no such file, its pid is not a live postgres
// or the file names another data directory, and nullopt after `timeout` when
// the server stays in another state (starting, stopping) that long.
std::optional<RunningServer> WaitForReadyServer(const std::string& data_dir, std::chrono::milliseconds timeout);

}  // namespace phasekey::pg::embedded

#endif  // PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_SHARING_H_
