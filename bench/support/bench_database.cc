#include "support/bench_database.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>

#include "phasekey/migrate.h"
#include "support/process_server.h"

namespace phasekey::bench {

const std::string& ServerUrl() {
  return support::ProcessServerUrl(std::filesystem::absolute("bench-pg-" + std::to_string(::getpid())).string(),
                                   "bench");
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
  url_ = support::UrlWithDatabase(ServerUrl(), name_);
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
  const std::string url = support::UrlWithDatabase(ServerUrl(), clone);
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
