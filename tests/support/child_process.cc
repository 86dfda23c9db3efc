#include "support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace phasekey::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           const std::string& stderr_path) {
  int fds[2];
  if (::pipe(fds) != 0) return;
  pid_ = ::fork();
  if (pid_ == 0) {
    if (!stderr_path.empty()) {
      const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (err < 0) ::_exit(126);
      ::dup2(err, 2);
    }
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
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
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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

}  // namespace phasekey::testing
