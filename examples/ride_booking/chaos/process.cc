#include "chaos/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "phasekey/tools/host_port.h"

namespace ride_booking {
namespace {

using phasekey::Result;
using phasekey::Status;
using Clock = std::chrono::steady_clock;

Status SysError(const std::string& what) { return Status::FailedPrecondition(what + ": " + std::strerror(errno)); }

int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void ExecChild(pid_t parent, int out_fd, int log_fd, char* const* argv, char* const* envp) {
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(log_fd, STDERR_FILENO);
  ::execve(argv[0], argv, envp);
  ::_exit(127);
}

// "listening on HOST:PORT" -> PORT; -1 if the line is not of that form.
int ListeningPort(std::string_view line) {
  constexpr std::string_view kPrefix = "listening on ";
  if (!line.starts_with(kPrefix)) return -1;
  const std::optional<phasekey::HostPort> at = phasekey::ParseHostPort(line.substr(kPrefix.size()));
  return at ? at->port : -1;
}

// Our environment without the names `extra` sets, then `extra`. The
// pointers stay valid while `extra` and the environment are unchanged.
std::vector<char*> MergedEnvironment(const std::vector<std::string>& extra) {
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    const auto overridden = [&var](const std::string& x) {
      const auto eq = x.find('=');
      return var.size() > eq && var.substr(0, eq + 1) == std::string_view(x).substr(0, eq + 1);
    };
    if (std::none_of(extra.begin(), extra.end(), overridden)) env.push_back(*e);
  }
  for (const auto& x : extra) env.push_back(const_cast<char*>(x.c_str()));
  env.push_back(nullptr);
  return env;
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                          const std::string& stderr_log,
                                                          const std::vector<std::string>& extra_env) {
  if (argv.empty()) return Status::InvalidArgument("no program to run");
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return SysError("pipe");
  const int log_fd = ::open(stderr_log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    Status s = SysError("open " + stderr_log);
    ::close(out[0]);
    ::close(out[1]);
    return s;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env = MergedEnvironment(extra_env);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) ExecChild(parent, out[1], log_fd, args.data(), env.data());
  Status fork_error = pid < 0 ? SysError("fork") : Status::OK();
  ::close(out[1]);
  ::close(log_fd);
  if (!fork_error.ok()) {
    ::close(out[0]);
    return fork_error;
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, out[0]));
}

ChildProcess::~ChildProcess() { Stop(); }

Result<int> ChildProcess::WaitListening(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    for (auto eol = stdout_buffer_.find('\n'); eol != std::string::npos; eol = stdout_buffer_.find('\n')) {
      const std::string line = stdout_buffer_.substr(0, eol);
      stdout_buffer_.erase(0, eol + 1);
      if (const int port = ListeningPort(line); port > 0) return port;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || stdout_fd_ < 0) {
      return Status::DeadlineExceeded("no \"listening on\" line within " + std::to_string(timeout.count()) + " ms");
    }
    pollfd p{stdout_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return SysError("poll");
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::FailedPrecondition("the program exited before listening");
    stdout_buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

bool ChildProcess::Exited(int* exit_code) {
  if (pid_ <= 0) return true;
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return false;
  if (r == pid_ && exit_code != nullptr) *exit_code = ExitCode(status);
  pid_ = -1;
  CloseStdout();
  return true;
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  CloseStdout();
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0) return -1;
  int status = 0;
  ::kill(pid_, SIGTERM);
  if (!ReapBy(Clock::now() + grace, &status)) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
  CloseStdout();
  return ExitCode(status);
}

bool ChildProcess::ReapBy(Clock::time_point deadline, int* status) {
  for (;;) {
    const pid_t r = ::waitpid(pid_, status, WNOHANG);
    if (r == pid_) return true;
    if (r < 0 && errno != EINTR) return true;  // not our child any more: nothing to reap
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ChildProcess::CloseStdout() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
}

}  // namespace ride_booking
