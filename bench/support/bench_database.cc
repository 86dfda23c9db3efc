#include "support/bench_database.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>

#include "phasekey/embedded_postgres.h"
#include "phasekey/migrate.h"

namespace phasekey::bench {
namespace {

// The embedded server of this process when DATABASE_URL is unset; stopped
// (and its directory removed) at exit.
struct OwnServer {
  std::unique_ptr<EmbeddedPostgres> server;
  std::string dir;
  ~OwnServer() {
    server.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::string StartOwnServer() {
  static OwnServer holder;
  holder.dir = std::filesystem::absolute("bench-pg-" + std::to_string(::getpid())).string();
  EmbeddedPostgresOptions options;
  options.base_dir = holder.dir;
  auto server = EmbeddedPostgres::Start(options);
  if (!server) {
    std::fprintf(stderr, "bench: cannot start an embedded PostgreSQL: %s\n", server.error().ToString().c_str());
    std::exit(2);
  }
  holder.server = std::move(*server);
  std::fprintf(stderr, "bench: DATABASE_URL unset; started embedded PostgreSQL at %s\n",
               holder.server->url().c_str());
  return holder.server->url();
}

}  // namespace

const std::string& ServerUrl() {
  static const std::string url = [] {
    const char* env = std::getenv("DATABASE_URL");
    if (env != nullptr && *env != '\0') return std::string(env);
    return StartOwnServer();
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

void AdminExec(const std::string& sql) {
  pqxx::connection conn(ServerUrl());
  pqxx::nontransaction tx(conn);
  tx.exec0(sql);
}

BenchDatabase::BenchDatabase(std::string_view family)
    : name_("pkb_" + std::string(family) + "_" + std::to_string(::getpid())) {
  AdminExec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  AdminExec("CREATE DATABASE " + name_);
  url_ = UrlWithDatabase(ServerUrl(), name_);
  auto report = Migrate(url_, EngineMigrations());
  if (!report) throw std::runtime_error("migrating " + name_ + " failed: " + report.error().ToString());
}

BenchDatabase::~BenchDatabase() {
  for (const auto& [clone, url] : clones_) {
    try {
      AdminExec("DROP DATABASE IF EXISTS " + clone + " WITH (FORCE)");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench: could not drop %s: %s\n", clone.c_str(), e.what());
    }
  }
  try {
    AdminExec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench: could not drop %s: %s\n", name_.c_str(), e.what());
  }
}

std::string BenchDatabase::Clone(std::string_view suffix) {
  const std::string clone = name_ + "_" + std::string(suffix);
  AdminExec("DROP DATABASE IF EXISTS " + clone + " WITH (FORCE)");
  AdminExec("CREATE DATABASE " + clone + " TEMPLATE " + name_);
  const std::string url = UrlWithDatabase(ServerUrl(), clone);
  clones_[clone] = url;
  return url;
}

std::map<std::string, std::string> ServerSettings(const std::string& url) {
  std::map<std::string, std::string> out;
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  for (const char* name : {"server_version", "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes",
                           "shared_buffers", "max_connections", "commit_delay"}) {
    out[name] = tx.exec1(std::string("SHOW ") + name)[0].as<std::string>();
  }
  return out;
}

}  // namespace phasekey::bench
