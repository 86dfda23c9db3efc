#include "support/test_database.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <random>
#include <stdexcept>

#include "phasekey/migrate.h"
#include "support/process_server.h"
#include "support/wait.h"

namespace phasekey::testing {
namespace {

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
  return support::ProcessServerUrl(std::string(PHASEKEY_TEST_BINARY_DIR) + "/test-pg/" + std::to_string(::getpid()),
                                   "test");
}

TestDatabase::TestDatabase(Schema schema) : name_(UniqueName()) {
  Admin("CREATE DATABASE " + name_);
  url_ = support::UrlWithDatabase(ServerUrl(), name_);
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

std::string TestDatabase::Value(const std::string& sql) const {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  const pqxx::field f = tx.exec1(sql)[0];
  return f.is_null() ? "<null>" : f.as<std::string>();
}

void TestDatabase::Exec(const std::string& sql) const {
  pqxx::connection conn(url_);
  pqxx::nontransaction tx(conn);
  tx.exec(sql);
}

bool TestDatabase::WaitForValue(const std::string& sql, const std::string& want,
                                std::chrono::milliseconds timeout) const {
  return WaitUntil([&] { return Value(sql) == want; }, timeout);
}

}  // namespace phasekey::testing
