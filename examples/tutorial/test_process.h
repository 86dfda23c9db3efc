// A child process for wallet_test: started with posix_spawn, its stdout in a
// file (so it can never block on a full pipe), stopped with a signal.
#ifndef WALLET_TEST_PROCESS_H_
#define WALLET_TEST_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace wallet {

class Child {
 public:
  // Starts argv[0] with `argv`, stdout to `stdout_path`, stderr the test's.
  // Throws std::runtime_error when it cannot be started.
  Child(const std::vector<std::string>& argv, std::string stdout_path);
  // Sends SIGKILL if it still runs, and reaps it.
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits for a stdout line starting with `prefix` and returns the rest of
  // the line; nullopt if the process exits first or `limit` passes.
  std::optional<std::string> WaitForLine(const std::string& prefix, std::chrono::seconds limit);
  // Sends `signal`, waits for the exit and returns the wait status.
  int Stop(int signal);

 private:
  pid_t pid_ = -1;
  std::string stdout_path_;
};

}  // namespace wallet

#endif  // WALLET_TEST_PROCESS_H_
