#include "support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string_view>

extern char** environ;

namespace phasekey::testing {
namespace {

// Exit statuses of a child that never reached its program.
constexpr int kStderrFailed = 126;  // the stderr file could not be opened or installed
constexpr int kExecFailed = 127;    // stdout could not be installed, or execve failed

// argv and envp as execve takes them, built before fork(): the child of a
// threaded process may only make async-signal-safe calls until it execs
// (another thread may have held the allocator's lock at the fork), so it
// must find everything ready. Holds pointers into `argv`, which must
// outlive it.
class ExecArguments {
 public:
  ExecArguments(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    for (const std::string& a : argv) argv_.push_back(const_cast<char*>(a.c_str()));
    argv_.push_back(nullptr);
    BuildEnvironment(env);
  }

  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  // Our environment, then `env` applied in order as putenv(3) would:
  // "NAME=value" sets NAME (replacing an earlier value), a bare "NAME"
  // removes it.
  void BuildEnvironment(const std::vector<std::string>& env) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) Put(*e);
    for (const std::string& e : env) Put(e);
    for (const std::string& e : environment_) envp_.push_back(const_cast<char*>(e.c_str()));
    envp_.push_back(nullptr);
  }

  // Sets (or, without '=', removes) one variable in environment_.
  void Put(std::string_view entry) {
    const std::string_view name = entry.substr(0, entry.find('='));
    std::erase_if(environment_, [name](const std::string& e) { return e.substr(0, e.find('=')) == name; });
    if (name.size() < entry.size()) environment_.emplace_back(entry);
  }

  std::vector<char*> argv_;
  std::vector<std::string> environment_;
  std::vector<char*> envp_;
};

// Makes `fd` the child's descriptor `target`, open across execve.
// Async-signal-safe.
bool InstallAs(int fd, int target) {
  if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;  // dup2 would keep FD_CLOEXEC
  return ::dup2(fd, target) == target;                    // the copy is not close-on-exec
}

// The child's side of fork(): only async-signal-safe calls. Every other
// descriptor of ours is close-on-exec, so the program gets stdin, stdout
// (the pipe), stderr (inherited, or the file) and nothing else we opened.
[[noreturn]] void ExecChild(const ExecArguments& args, int out_fd, int err_fd, bool err_failed) {
  if (err_failed || (err_fd >= 0 && !InstallAs(err_fd, STDERR_FILENO))) ::_exit(kStderrFailed);
  if (!InstallAs(out_fd, STDOUT_FILENO)) ::_exit(kExecFailed);
  ::execve(args.argv()[0], args.argv(), args.envp());
  ::_exit(kExecFailed);
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           const std::string& stderr_path) {
  const ExecArguments args(argv, env);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  const int err_fd =
      stderr_path.empty() ? -1 : ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const bool err_failed = !stderr_path.empty() && err_fd < 0;
  pid_ = ::fork();
  if (pid_ == 0) ExecChild(args, fds[1], err_fd, err_failed);
  if (err_fd >= 0) ::close(err_fd);
  ::close(fds[1]);
  if (pid_ < 0) {
    ::close(fds[0]);
    return;
  }
  out_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    Wait();
  }
  if (out_ >= 0) ::close(out_);
}

std::string ChildProcess::WaitForLine(const std::string& prefix, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    for (auto eol = buffered_.find('\n'); eol != std::string::npos; eol = buffered_.find('\n')) {
      std::string line = buffered_.substr(0, eol);
      buffered_.erase(0, eol + 1);
      if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return "";
    pollfd p{out_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return "";
    char buf[1024];
    const ssize_t n = ::read(out_, buf, sizeof buf);
    if (n <= 0) return "";
    buffered_.append(buf, static_cast<std::size_t>(n));
  }
}

std::uint16_t ChildProcess::WaitForListeningPort(std::chrono::milliseconds timeout) {
  const std::string rest = WaitForLine("listening on ", timeout);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) return 0;
  return static_cast<std::uint16_t>(std::atoi(rest.substr(colon + 1).c_str()));
}

std::string ChildProcess::ReadAll() {
  std::string out = std::move(buffered_);
  buffered_.clear();
  char buf[4096];
  for (ssize_t n; out_ >= 0 && (n = ::read(out_, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

std::optional<int> ChildProcess::TryWait() {
  if (pid_ <= 0) return std::nullopt;
  if (reaped_) return -1;
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r != pid_) return std::nullopt;
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ChildProcess::Wait() {
  if (pid_ <= 0 || reaped_) return -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

RunResult RunToEnd(const std::vector<std::string>& argv) {
  ChildProcess child(argv);
  RunResult r;
  r.out = child.ReadAll();
  r.exit_code = child.Wait();
  return r;
}

char ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return '?';
  const auto paren = line.rfind(')');  // the command name may hold spaces
  return paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
}

}  // namespace phasekey::testing
