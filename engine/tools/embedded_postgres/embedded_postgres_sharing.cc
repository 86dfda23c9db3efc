#include "embedded_postgres/embedded_postgres_sharing.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "embedded_postgres/embedded_postgres_internal.h"

namespace phasekey::pg::embedded {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPollInterval{50};

// postmaster.pid's lines (PostgreSQL's LOCK_FILE_LINE_*), counted from 1.
constexpr int kPidLine = 1;
constexpr int kDataDirLine = 2;
constexpr int kPortLine = 4;
constexpr int kStatusLine = 8;

struct PidFileLines {
  pid_t pid = 0;
  std::string data_dir;
  int port = 0;
  std::string status;  // "starting", "stopping", "ready", "standby"; trimmed
};

int ParsePositive(const std::string& text, long max) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || v <= 0 || v > max) return 0;
  return static_cast<int>(v);
}

bool ReadLines(const std::string& path, PidFileLines* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == kPidLine) out->pid = ParsePositive(line, 0x7fffffff);
    if (n == kDataDirLine) out->data_dir = line;
    if (n == kPortLine) out->port = ParsePositive(line, 65535);
    if (n == kStatusLine) out->status = line.substr(0, line.find_last_not_of(' ') + 1);
  }
  return true;
}

}  // namespace

Result<StartLock> StartLock::Acquire(const std::string& base_dir, bool chown_to_owner, uid_t owner_uid, gid_t owner_gid,
                                     std::chrono::milliseconds timeout) {
  const std::string path = base_dir + "/" + kStartLockName;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::FailedPrecondition("cannot open " + path + ": " + std::strerror(errno));
  }
  if (chown_to_owner) (void)fchown(fd, owner_uid, owner_gid);  // only tidiness: root can lock it anyway
  StartLock lock(fd);
  const auto deadline = Clock::now() + timeout;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Status::FailedPrecondition("cannot lock " + path + ": " + std::strerror(errno));
    }
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded("another process has been starting the server in " + base_dir + " for " +
                                      std::to_string(timeout.count()) + " ms (" + path + ")");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return lock;
}

StartLock& StartLock::operator=(StartLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

StartLock::~StartLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor drops the flock
}

std::optional<RunningServer> WaitForReadyServer(const std::string& data_dir, std::chrono::milliseconds timeout) {
  const std::string path = data_dir + "/postmaster.pid";
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    PidFileLines lines;
    if (!ReadLines(path, &lines) || !IsLivePostgres(lines.pid) || lines.data_dir != data_dir) {
      return std::nullopt;
    }
    if (lines.status == "ready" && lines.port > 0) return RunningServer{lines.pid, lines.port};
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace phasekey::pg::embedded
