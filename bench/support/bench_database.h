// Benchmark databases on a real PostgreSQL server.
//
// The server is $DATABASE_URL when set (./run.sh bench starts one embedded
// server for the whole run and sets it); otherwise this process starts an
// embedded server of its own under the current directory and stops it at
// exit. Each BenchDatabase is a fresh database on that server, with the
// engine's migrations applied, dropped on destruction: every family runs in
// its own database, so one family's rows never weigh on another's figures.
//
// Thread-safety: ServerUrl() is thread-safe; a BenchDatabase is used from the
// thread that made it (its url() from any).
#ifndef PHASEKEY_BENCH_SUPPORT_BENCH_DATABASE_H_
#define PHASEKEY_BENCH_SUPPORT_BENCH_DATABASE_H_

#include <map>
#include <string>
#include <string_view>

namespace phasekey::bench {

// URL of the server every family of this process uses. Exits the process
// with a message when no server can be had.
const std::string& ServerUrl();

// Runs one statement outside a transaction on the server's maintenance
// database (CREATE/DROP DATABASE). Throws pqxx exceptions.
void AdminExec(const std::string& sql);

class BenchDatabase {
 public:
  // Creates "pkb_<family>_<pid>" (dropping a leftover of the same name) and
  // applies the engine migrations. Throws std::runtime_error on failure.
  explicit BenchDatabase(std::string_view family);
  ~BenchDatabase();
  BenchDatabase(const BenchDatabase&) = delete;
  BenchDatabase& operator=(const BenchDatabase&) = delete;

  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }

  // A new database copied from this one (CREATE DATABASE ... TEMPLATE),
  // named "<name>_<suffix>"; nobody may be connected to this one meanwhile.
  // The copy is dropped with this object.
  std::string Clone(std::string_view suffix);

 private:
  std::string name_;
  std::string url_;
  std::map<std::string, std::string> clones_;  // name -> url
};

// The server settings that decide what a commit costs, as name -> value:
// server_version, fsync, synchronous_commit, wal_sync_method, full_page_writes,
// shared_buffers, max_connections, commit_delay.
std::map<std::string, std::string> ServerSettings(const std::string& url);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_BENCH_DATABASE_H_
