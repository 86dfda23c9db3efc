// A PostgreSQL server of one test's own, for tests that hurt the server
// itself (SIGKILL, SIGSTOP, a moved clock, a network partition) and so must
// not share the process-wide test server. An EmbeddedPostgres on a fixed
// port, so that a restart keeps the URL the services were given.
//
// Start() must be called from a thread that lives as long as the server
// should (the test's main thread): the server gets SIGINT when the thread
// that started it exits (phasekey/tools/embedded_postgres.h). Not thread-safe.
#ifndef PHASEKEY_TESTS_SUPPORT_DEDICATED_POSTGRES_H_
#define PHASEKEY_TESTS_SUPPORT_DEDICATED_POSTGRES_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "phasekey/status.h"
#include "phasekey/tools/embedded_postgres.h"

namespace phasekey::testing {

struct DedicatedPostgresOptions {
  // Directory name under <build>/dedicated-pg/; the pid is appended.
  std::string name;
  // Environment for the server processes only ("NAME=value"), e.g. an
  // LD_PRELOAD. Set around Start() and removed afterwards.
  std::vector<std::string> server_env;
  // Files written before the first start into files_dir(), readable by the
  // server's user: {file name, contents}. "@FILES_DIR@" in a server_env
  // value stands for files_dir().
  std::vector<std::pair<std::string, std::string>> files;
};

class DedicatedPostgres {
 public:
  explicit DedicatedPostgres(DedicatedPostgresOptions options);
  // Stops the server and removes its directory.
  ~DedicatedPostgres();
  DedicatedPostgres(const DedicatedPostgres&) = delete;
  DedicatedPostgres& operator=(const DedicatedPostgres&) = delete;

  // Starts, or starts again after Kill(), on the same directory and port
  // (the first start may move to another port if the chosen one was taken).
  Status Start();
  // SIGKILLs the postmaster (its backends notice and exit), and reaps it.
  void Kill();
  // SIGSTOP / SIGCONT to the postmaster and every process it started
  // (backends, checkpointer, WAL writer, ...): the whole server hangs, with
  // its sockets open.
  void Freeze();
  void Thaw();

  const std::string& url() const { return url_; }  // TCP, database "postgres"
  std::string socket_conninfo() const { return server_ ? server_->socket_conninfo() : ""; }
  const std::string& base_dir() const { return base_dir_; }
  // A directory beside base_dir() for the test's own files (the server
  // refuses a base_dir holding foreign files).
  std::string files_dir() const { return base_dir_ + ".files"; }
  int port() const { return port_; }
  pid_t pid() const { return server_ ? server_->pid() : -1; }

 private:
  DedicatedPostgresOptions options_;
  std::string base_dir_;
  int port_ = 0;
  std::string url_;
  std::unique_ptr<EmbeddedPostgres> server_;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_DEDICATED_POSTGRES_H_
