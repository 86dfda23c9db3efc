// Real child processes for tests: spawn with a given environment, read the
// first stdout line matching a prefix (e.g. "listening on"), kill with a
// real signal, reap. The destructor kills (SIGKILL) and reaps whatever is
// still running, so no test leaves an orphan. stderr is inherited, or
// appended to a file when the test wants to read what the child logged.
#ifndef PHASEKEY_TESTS_SUPPORT_CHILD_PROCESS_H_
#define PHASEKEY_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace phasekey::testing {

class ChildProcess {
 public:
  // Starts argv[0] with argv and our environment plus `env` ("NAME=value";
  // applied in order, as putenv would); stdout is a pipe. stderr is
  // inherited when `stderr_path` is empty, else appended to that file
  // (created 0600 if missing); the file is the caller's to read and delete.
  // Safe to call from any thread: the child runs only async-signal-safe code
  // until it execs. It inherits no descriptor this class opened other than
  // its stdout and stderr (the pipe is close-on-exec on our side too, so
  // other children never hold it open).
  explicit ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env = {},
                        const std::string& stderr_path = "");
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Reads stdout until a line starting with `prefix`; returns the rest of it,
  // or "" on EOF or timeout.
  std::string WaitForLine(const std::string& prefix, std::chrono::milliseconds timeout);
  // For "listening on HOST:PORT" lines: the port, or 0.
  std::uint16_t WaitForListeningPort(std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

  // Reads stdout to its end (the child exits or closes it), after whatever
  // WaitForLine has read but not consumed.
  std::string ReadAll();

  void Signal(int sig);
  // Waits for the exit; returns the exit status, or 128 + signal.
  int Wait();
  // Without waiting: the exit status (as Wait) if the child has ended, else
  // nullopt.
  std::optional<int> TryWait();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string buffered_;
  bool reaped_ = false;
};

// What a program run to its end printed and how it ended.
struct RunResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string out;     // its stdout
};

// Runs argv[0] (a path) with argv to the end; stderr goes to the test's log.
RunResult RunToEnd(const std::vector<std::string>& argv);

// The state letter of process `pid` as /proc/<pid>/stat shows it ('T' when
// stopped by a signal, 'S' sleeping, 'R' running, ...); '?' when it cannot
// be read. For fault tests that must prove a process really was stopped.
char ProcessState(pid_t pid);

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_CHILD_PROCESS_H_
