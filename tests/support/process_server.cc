#include "support/process_server.h"

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "phasekey/tools/embedded_postgres.h"

namespace phasekey::support {
namespace {

// The embedded server of this process, owned by a thread that lives until
// the holder is destroyed at exit.
class EmbeddedForProcess {
 public:
  std::string Start(const std::string& dir) {
    dir_ = dir;
    std::unique_lock lock(mu_);
    thread_ = std::thread([this] { Own(); });
    ready_.wait(lock, [this] { return started_; });
    return url_;
  }
  // The URL without the password, for messages; set by Start().
  const std::string& display_url() const { return display_url_; }
  ~EmbeddedForProcess() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    ready_.notify_all();
    thread_.join();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  void Own() {
    EmbeddedPostgresOptions options;
    options.base_dir = dir_;
    auto server = EmbeddedPostgres::Start(options);
    if (!server) {
      std::fprintf(stderr, "cannot start an embedded PostgreSQL: %s\n", server.error().ToString().c_str());
      std::exit(2);
    }
    std::unique_lock lock(mu_);
    url_ = (*server)->url();
    display_url_ = (*server)->display_url();
    started_ = true;
    ready_.notify_all();
    ready_.wait(lock, [this] { return stop_; });
  }

  std::string dir_, url_, display_url_;
  std::mutex mu_;
  std::condition_variable ready_;
  bool started_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace

const std::string& ProcessServerUrl(const std::string& dir, std::string_view who) {
  static const std::string url = [&] {
    const char* env = std::getenv("DATABASE_URL");
    if (env != nullptr && *env != '\0') return std::string(env);
    static EmbeddedForProcess holder;
    std::string started = holder.Start(dir);
    std::fprintf(stderr, "[%.*s] DATABASE_URL unset: started embedded PostgreSQL at %s\n", static_cast<int>(who.size()),
                 who.data(), holder.display_url().c_str());
    return started;
  }();
  return url;
}

std::string UrlWithDatabase(std::string_view url, std::string_view dbname) {
  std::string u(url);
  const auto scheme = u.find("://");
  if (scheme == std::string::npos) return u + " dbname=" + std::string(dbname);
  const auto query = u.find('?', scheme + 3);
  const std::string params = query == std::string::npos ? "" : u.substr(query);
  std::string base = query == std::string::npos ? u : u.substr(0, query);
  const auto slash = base.find('/', scheme + 3);
  if (slash != std::string::npos) base.resize(slash);
  return base + "/" + std::string(dbname) + params;
}

}  // namespace phasekey::support
