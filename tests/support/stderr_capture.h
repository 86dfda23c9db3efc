// The engine's log lines (LogJson writes each to file descriptor 2) as a
// test sees them: while a StderrCapture lives, fd 2 goes to a file of its
// own; lines() reads the JSON lines written since. Not thread-safe; one at a
// time per process.
#ifndef PHASEKEY_TESTS_SUPPORT_STDERR_CAPTURE_H_
#define PHASEKEY_TESTS_SUPPORT_STDERR_CAPTURE_H_

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace phasekey::testing {

class StderrCapture {
 public:
  StderrCapture() {
    char name[] = "/tmp/phasekey-stderr-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    path_ = name;
    std::fflush(stderr);
    saved_ = ::dup(2);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    std::remove(path_.c_str());
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Every line written so far that is a JSON object (other output skipped).
  std::vector<nlohmann::json> lines() const {
    std::ifstream in(path_);
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) out.push_back(std::move(j));
    }
    return out;
  }

  // The lines whose "msg" is `msg`.
  std::vector<nlohmann::json> lines(const std::string& msg) const {
    std::vector<nlohmann::json> out;
    for (auto& j : lines()) {
      if (j.value("msg", "") == msg) out.push_back(std::move(j));
    }
    return out;
  }

 private:
  std::string path_;
  int saved_ = -1;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_STDERR_CAPTURE_H_
