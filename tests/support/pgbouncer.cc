#include "support/pgbouncer.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "embedded_postgres/embedded_postgres_internal.h"
#include "pg/conninfo.h"

namespace phasekey::testing {
namespace {

std::string Get(const pg::ConnSettings& m, const std::string& key, const std::string& fallback) {
  auto it = m.find(key);
  return it == m.end() ? fallback : it->second;
}

}  // namespace

Result<std::unique_ptr<PgBouncer>> PgBouncer::Start(const std::string& server_url, PgBouncerOptions options) {
  if (access(kPgBouncerPath, X_OK) != 0) {
    return Status::FailedPrecondition(std::string(kPgBouncerPath) + " is missing (Debian package pgbouncer)");
  }
  const pg::ConnSettings server = pg::ParseConnInfo(server_url).value_or(pg::ConnSettings{});
  const std::string user = Get(server, "user", "postgres");
  const std::string dbname = Get(server, "dbname", user);
  // The server's password (the embedded server's is generated): PgBouncer
  // logs in to the server with the auth_file's password of the user; its own
  // clients need none (auth_type trust).
  const std::string password = Get(server, "password", "");
  std::unique_ptr<PgBouncer> b(new PgBouncer());
  char tmpl[] = "/tmp/phasekey-pgbouncer-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::FailedPrecondition("mkdtemp failed");
  b->dir_ = tmpl;
  const bool root = geteuid() == 0;
  if (root) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr || chown(tmpl, pw->pw_uid, pw->pw_gid) != 0) {
      return Status::FailedPrecondition("cannot hand " + b->dir_ + " to the postgres user");
    }
  }
  Result<int> port = pg::embedded::PickFreePort();
  if (!port) return port.error();
  std::ofstream(b->dir_ + "/users.txt") << '"' << user << "\" \"" << password << "\"\n";
  std::ofstream(b->dir_ + "/pgbouncer.ini")
      << "[databases]\n* = host=" << Get(server, "host", "127.0.0.1") << " port=" << Get(server, "port", "5432")
      << "\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = " << *port
      << "\nunix_socket_dir =\nauth_type = trust\nauth_file = " << b->dir_
      << "/users.txt\npool_mode = transaction\ndefault_pool_size = " << options.pool_size
      << "\nmax_client_conn = 200\nlogfile = " << b->dir_ << "/pgbouncer.log\npidfile = " << b->dir_
      << "/pgbouncer.pid\n";
  std::vector<std::string> argv = {kPgBouncerPath};
  if (root) argv.insert(argv.end(), {"-u", "postgres"});
  argv.push_back(b->dir_ + "/pgbouncer.ini");
  b->process_ = std::make_unique<ChildProcess>(argv, std::vector<std::string>{}, b->dir_ + "/stderr.log");
  b->restart_ = "p=$(cat " + b->dir_ + "/pgbouncer.pid) && kill -TERM \"$p\" && while [ -e " + b->dir_ +
                "/pgbouncer.pid ]; do sleep 0.05; done && " + kPgBouncerPath + (root ? " -u postgres" : "") + " -d " +
                b->dir_ + "/pgbouncer.ini";
  b->url_ = "host=127.0.0.1 port=" + std::to_string(*port) + " user=" + user + " dbname=" + dbname;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (PQping(b->url_.c_str()) != PQPING_OK) {
    if (b->process_->TryWait() || std::chrono::steady_clock::now() >= deadline) {
      return Status::FailedPrecondition("pgbouncer did not come up: " + b->Log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return b;
}

PgBouncer::~PgBouncer() {
  if (process_) {
    process_->Signal(SIGTERM);
    process_->Wait();
  }
  // A PgBouncer RestartCommand() started runs as a daemon of its own.
  const std::string pidfile = dir_ + "/pgbouncer.pid";
  if (std::ifstream in(pidfile); in) {
    pid_t pid = 0;
    if (in >> pid && pid > 0 && ::kill(pid, SIGTERM) == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (std::filesystem::exists(pidfile) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string PgBouncer::Log() const {
  std::ostringstream out;
  out << std::ifstream(dir_ + "/pgbouncer.log").rdbuf() << std::ifstream(dir_ + "/stderr.log").rdbuf();
  return out.str();
}

}  // namespace phasekey::testing
