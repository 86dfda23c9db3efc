#include "support/pgbouncer.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace phasekey::testing {
namespace {

std::map<std::string, std::string> ParseConnInfo(const std::string& conninfo) {
  std::map<std::string, std::string> out;
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (options == nullptr) {
    PQfreemem(error);
    return out;
  }
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && *o->val != '\0') out[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  return out;
}

// A loopback port nobody listens on right now.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string Get(const std::map<std::string, std::string>& m, const std::string& key, const std::string& fallback) {
  auto it = m.find(key);
  return it == m.end() ? fallback : it->second;
}

}  // namespace

Result<std::unique_ptr<PgBouncer>> PgBouncer::Start(const std::string& server_url, PgBouncerOptions options) {
  if (access(kPgBouncerPath, X_OK) != 0) {
    return Status::FailedPrecondition(std::string(kPgBouncerPath) + " is missing (Debian package pgbouncer)");
  }
  const auto server = ParseConnInfo(server_url);
  const std::string user = Get(server, "user", "postgres");
  const std::string dbname = Get(server, "dbname", user);
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
  const int port = FreePort();
  std::ofstream(b->dir_ + "/users.txt") << '"' << user << "\" \"\"\n";
  std::ofstream(b->dir_ + "/pgbouncer.ini")
      << "[databases]\n* = host=" << Get(server, "host", "127.0.0.1") << " port=" << Get(server, "port", "5432")
      << "\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = " << port
      << "\nunix_socket_dir =\nauth_type = trust\nauth_file = " << b->dir_
      << "/users.txt\npool_mode = transaction\ndefault_pool_size = " << options.pool_size
      << "\nmax_client_conn = 200\nlogfile = " << b->dir_ << "/pgbouncer.log\n";
  std::vector<std::string> argv = {kPgBouncerPath};
  if (root) argv.insert(argv.end(), {"-u", "postgres"});
  argv.push_back(b->dir_ + "/pgbouncer.ini");
  b->process_ = std::make_unique<ChildProcess>(argv, std::vector<std::string>{}, b->dir_ + "/stderr.log");
  b->url_ = "host=127.0.0.1 port=" + std::to_string(port) + " user=" + user + " dbname=" + dbname;
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
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string PgBouncer::Log() const {
  std::ostringstream out;
  out << std::ifstream(dir_ + "/pgbouncer.log").rdbuf() << std::ifstream(dir_ + "/stderr.log").rdbuf();
  return out.str();
}

}  // namespace phasekey::testing
