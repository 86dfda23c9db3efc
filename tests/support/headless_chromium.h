// Debian's chromium, headless, driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ending in a NUL byte; the browser
// reads fd 3 and writes fd 4), for tests that need a real browser: it runs
// the pages' own script under their Content-Security-Policy, keeps cookies,
// follows redirects and submits forms as a person's browser does.
// One page (tab); not thread-safe.
#ifndef PHASEKEY_TESTS_SUPPORT_HEADLESS_CHROMIUM_H_
#define PHASEKEY_TESTS_SUPPORT_HEADLESS_CHROMIUM_H_

#include <sys/types.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace phasekey::testing {

class HeadlessChromium {
 public:
  // The chromium binary on PATH, or "" when it is not installed.
  static std::string Find();

  // Starts chromium (a fresh profile in a temporary directory) and attaches
  // to its page. Throws std::runtime_error when it cannot.
  explicit HeadlessChromium(const std::string& binary);
  // Closes the browser, kills it if it lingers, reaps it, removes the
  // profile.
  ~HeadlessChromium();
  HeadlessChromium(const HeadlessChromium&) = delete;
  HeadlessChromium& operator=(const HeadlessChromium&) = delete;

  // Loads `url` and waits until the document is complete.
  void Navigate(const std::string& url);
  // Runs `expression` in the page (awaiting a promise) and returns its value.
  // Throws on a JavaScript exception.
  nlohmann::json Eval(const std::string& expression);
  // Polls `condition` (a JavaScript expression) until it is true; false
  // when `timeout` passes first. Errors while the page navigates count as
  // false.
  bool WaitFor(const std::string& condition, std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));
  // Runs `script` at the start of every document loaded from now on, before
  // the page's own (outside its Content-Security-Policy).
  void AddScriptOnEveryPage(const std::string& script);
  // Writes a PNG of the page's viewport.
  void Screenshot(const std::string& path);

 private:
  // Sends one command and returns its result, skipping events. Throws on a
  // protocol error or when the browser goes away.
  nlohmann::json Call(const std::string& method, const nlohmann::json& params, bool on_page = true);

  pid_t pid_ = -1;
  int to_browser_ = -1, from_browser_ = -1;
  std::string profile_dir_;
  std::string session_;  // the page's DevTools session
  std::string buffered_;
  int next_id_ = 1;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_HEADLESS_CHROMIUM_H_
