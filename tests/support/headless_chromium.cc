#include "support/headless_chromium.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace phasekey::testing {
namespace {

std::string Base64Decode(const std::string& in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0, acc = 0;
  for (const char c : in) {
    const int v = value(c);
    if (v < 0) continue;  // '=' padding and line breaks
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace

std::string HeadlessChromium::Find() {
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "/usr/bin" : path;
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t colon = dirs.find(':', start);
    const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    for (const char* name : {"chromium", "chromium-browser"}) {
      const std::string candidate = dir + "/" + name;
      if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

HeadlessChromium::HeadlessChromium(const std::string& binary) {
  char dir[] = "/tmp/phasekey-chromium-XXXXXX";
  if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  profile_dir_ = dir;
  std::vector<std::string> args = {binary,
                                   "--headless",
                                   "--remote-debugging-pipe",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-dev-shm-usage",
                                   "--window-size=1280,900",
                                   "--user-data-dir=" + profile_dir_,
                                   "about:blank"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int to[2], from[2];
  if (::pipe(to) != 0 || ::pipe(from) != 0) throw std::runtime_error("pipe failed");
  const int devnull = ::open("/dev/null", O_WRONLY);
  pid_ = ::fork();
  if (pid_ == 0) {
    // Only async-signal-safe calls until exec. fds 3 and 4 may be taken by
    // the pipes themselves: move them clear first.
    const int r = ::fcntl(to[0], F_DUPFD, 10), w = ::fcntl(from[1], F_DUPFD, 10);
    const int null = ::fcntl(devnull, F_DUPFD, 10);
    ::dup2(r, 3);
    ::dup2(w, 4);
    ::dup2(null, 1);
    ::dup2(null, 2);
    for (int fd = 5; fd < 1024; ++fd) ::close(fd);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(devnull);
  ::close(to[0]);
  ::close(from[1]);
  to_browser_ = to[1];
  from_browser_ = from[0];
  ::fcntl(to_browser_, F_SETFD, FD_CLOEXEC);
  ::fcntl(from_browser_, F_SETFD, FD_CLOEXEC);
  if (pid_ < 0) throw std::runtime_error("fork failed");
  const nlohmann::json targets = Call("Target.getTargets", nlohmann::json::object(), false);
  for (const auto& t : targets["targetInfos"]) {
    if (t["type"] != "page") continue;
    session_ = Call("Target.attachToTarget", {{"targetId", t["targetId"]}, {"flatten", true}}, false)["sessionId"];
    break;
  }
  if (session_.empty()) throw std::runtime_error("chromium has no page to attach to");
  Call("Page.enable", nlohmann::json::object());
}

HeadlessChromium::~HeadlessChromium() {
  if (to_browser_ >= 0) {
    try {
      Call("Browser.close", nlohmann::json::object(), false);
    } catch (const std::exception&) {
    }
  }
  if (pid_ > 0) {
    // It exits on Browser.close; SIGKILL only if it has not after 5 s.
    for (int i = 0; i < 100 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (i == 99) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
  }
  if (to_browser_ >= 0) ::close(to_browser_);
  if (from_browser_ >= 0) ::close(from_browser_);
  std::error_code ec;
  if (!profile_dir_.empty()) std::filesystem::remove_all(profile_dir_, ec);
}

nlohmann::json HeadlessChromium::Call(const std::string& method, const nlohmann::json& params, bool on_page) {
  const int id = next_id_++;
  nlohmann::json msg = {{"id", id}, {"method", method}, {"params", params}};
  if (on_page) msg["sessionId"] = session_;
  const std::string out = msg.dump() + '\0';
  for (std::size_t sent = 0; sent < out.size();) {
    const ssize_t n = ::write(to_browser_, out.data() + sent, out.size() - sent);
    if (n <= 0) throw std::runtime_error("chromium closed its pipe");
    sent += static_cast<std::size_t>(n);
  }
  for (;;) {
    std::size_t end;
    while ((end = buffered_.find('\0')) == std::string::npos) {
      char buf[65536];
      const ssize_t n = ::read(from_browser_, buf, sizeof buf);
      if (n <= 0) throw std::runtime_error("chromium went away during " + method);
      buffered_.append(buf, static_cast<std::size_t>(n));
    }
    nlohmann::json reply = nlohmann::json::parse(buffered_.substr(0, end));
    buffered_.erase(0, end + 1);
    if (!reply.contains("id") || reply["id"] != id) continue;  // an event, or an earlier answer
    if (reply.contains("error")) throw std::runtime_error(method + ": " + reply["error"].dump());
    return reply["result"];
  }
}

void HeadlessChromium::Navigate(const std::string& url) {
  // A mark on the old document tells it from the new one.
  Eval("window.phasekeyOldDocument = true");
  Call("Page.navigate", {{"url", url}});
  if (!WaitFor("!window.phasekeyOldDocument && document.readyState === 'complete'")) {
    throw std::runtime_error("page did not load: " + url);
  }
}

nlohmann::json HeadlessChromium::Eval(const std::string& expression) {
  nlohmann::json r =
      Call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}, {"awaitPromise", true}});
  if (r.contains("exceptionDetails")) throw std::runtime_error("JavaScript failed: " + r["exceptionDetails"].dump());
  return r["result"].value("value", nlohmann::json());
}

bool HeadlessChromium::WaitFor(const std::string& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      if (Eval("!!(" + condition + ")") == true) return true;
    } catch (const std::runtime_error&) {
      // The page is between documents.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void HeadlessChromium::AddScriptOnEveryPage(const std::string& script) {
  Call("Page.addScriptToEvaluateOnNewDocument", {{"source", script}});
}

void HeadlessChromium::Screenshot(const std::string& path) {
  nlohmann::json r = Call("Page.captureScreenshot", {{"format", "png"}});
  std::ofstream f(path, std::ios::binary);
  f << Base64Decode(r["data"].get<std::string>());
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace phasekey::testing
