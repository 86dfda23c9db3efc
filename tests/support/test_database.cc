#include "support/test_database.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <random>
#include <stdexcept>

#include "phasekey/embedded_postgres.h"
#include "phasekey/migrate.h"

namespace phasekey::testing {
namespace {

// The embedded server of this test process. It is started on a thread of
// its own that lives until exit: the server's parent-death signal fires when
// the *thread* that started it ends, and tests call ServerUrl() from
// short-lived threads too.
class EmbeddedForProcess {
 public:
  std::string Start() {
    dir_ = std::string(PHASEKEY_TEST_BINARY_DIR) + "/test-pg/" + std::to_string(::getpid());
    std::unique_lock lock(mu_);
    thread_ = std::thread([this] { Own(); });
    ready_.wait(lock, [this] { return started_; });
    return url_;
  }
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
      std::fprintf(stderr, "cannot start the embedded PostgreSQL for tests: %s\n", server.error().ToString().c_str());
      std::abort();
    }
    std::unique_lock lock(mu_);
    url_ = (*server)->url();
    started_ = true;
    ready_.notify_all();
    ready_.wait(lock, [this] { return stop_; });
  }

  std::string dir_, url_;
  std::mutex mu_;
  std::condition_variable ready_;
  bool started_ = false, stop_ = false;
  std::thread thread_;
};

std::string StartEmbedded() {
  static EmbeddedForProcess holder;
  const std::string url = holder.Start();
  std::fprintf(stderr, "[test] DATABASE_URL unset: started embedded PostgreSQL at %s\n", url.c_str());
  return url;
}

std::string UniqueName() {
  static std::atomic<int> counter{0};
  std::random_device rd;
  return "pk_t" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" + std::to_string(rd() % 1000000);
}

void Admin(const std::string& sql) {
  pqxx::connection conn(ServerUrl());
  pqxx::nontransaction tx(conn);
  tx.exec0(sql);
}

}  // namespace

const std::string& ServerUrl() {
  static const std::string url = [] {
    const char* env = std::getenv("DATABASE_URL");
    if (env != nullptr && *env != '\0') return std::string(env);
    return StartEmbedded();
  }();
  return url;
}

std::string UrlWithDatabase(std::string_view url, std::string_view dbname) {
  std::string u(url);
  const auto scheme = u.find("://");
  if (scheme == std::string::npos) return u + " dbname=" + std::string(dbname);
  const auto query = u.find('?', scheme + 3);
  std::string params = query == std::string::npos ? "" : u.substr(query);
  std::string base = query == std::string::npos ? u : u.substr(0, query);
  const auto slash = base.find('/', scheme + 3);
  if (slash != std::string::npos) base.resize(slash);
  return base + "/" + std::string(dbname) + params;
}

TestDatabase::TestDatabase(Schema schema) : name_(UniqueName()) {
  Admin("CREATE DATABASE " + name_);
  url_ = UrlWithDatabase(ServerUrl(), name_);
  if (schema == Schema::kMigrated) {
    auto report = Migrate(url_, EngineMigrations());
    if (!report) throw std::runtime_error("migrating the test database failed: " + report.error().ToString());
  }
}

TestDatabase::~TestDatabase() {
  try {
    Admin("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[test] could not drop %s: %s\n", name_.c_str(), e.what());
  }
}

}  // namespace phasekey::testing
