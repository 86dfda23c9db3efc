// EmbeddedPostgres: a private PostgreSQL 15 server run as a child process.
//
// Used by the CLI, the tests, the demo and the benchmarks when no
// DATABASE_URL is given. The data directory is created with initdb on first
// start and reused afterwards. The server's life is tied to ours: it gets
// SIGINT (fast shutdown) when the thread that called Start() exits (Linux
// parent-death signal), so call Start() from a thread that lives as long as
// the server should (normally the main thread). When running as root the
// server runs as an unprivileged system user (default "postgres"): base_dir
// is handed to that user; Start() fails if that user cannot reach it (no
// ancestor is opened up).
//
// Nobody connects without the password (docs/database.md, "Who can
// connect"): scram-sha-256 on 127.0.0.1 and on the unix socket, and base_dir
// (with the socket) is 0700. initdb gives the role a random password, kept in
// base_dir/pgpass (libpq's pgpass format, 0600); a cluster without that file
// gets a new one at the next start. url() and socket_conninfo() carry the
// password; display_url() does not, for what is printed or logged.
//
// Several processes may share one base_dir (a service and its worker): with
// attach_to_running set, Start() in the second process connects to the
// server the first one started instead of failing on the busy data
// directory. That server still lives only as long as the process that
// started it.
//
// The unix socket lives in base_dir, or in /tmp/phasekey-pg-<hash> when
// base_dir is too long for a socket path (108 bytes).
//
// Thread-safety: an EmbeddedPostgres object is not thread-safe; url() may be
// read from any thread once Start() has returned.
#ifndef PHASEKEY_TOOLS_EMBEDDED_POSTGRES_H_
#define PHASEKEY_TOOLS_EMBEDDED_POSTGRES_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "phasekey/status.h"

namespace phasekey {

// Where an EmbeddedPostgres keeps its server and how it starts it; only
// base_dir is required.
struct EmbeddedPostgresOptions {
  // Directory holding everything: data/ (the cluster), server.log and the
  // unix socket. Created if missing. Required, absolute or relative.
  std::string base_dir;

  // Where initdb and postgres live. Debian's postgresql-15 puts them here.
  std::string bin_dir = "/usr/lib/postgresql/15/bin";

  // The system user the server runs as when we are root (initdb and postgres
  // refuse to run as root). Ignored when not root.
  std::string system_user = "postgres";

  // The database role created by initdb, with a generated password (see the
  // file comment).
  // Not "phasekey": a role named like the engine's schema would put that
  // schema first on its search_path ("$user"), so an application's
  // unqualified tables would land in it.
  std::string role = "postgres";

  // TCP port on 127.0.0.1. 0 picks a free port at each start.
  int port = 0;

  // How long to wait for the server to accept connections (PQping).
  std::chrono::milliseconds start_timeout{30000};

  // Extra "-c name=value" server settings, e.g. {"fsync", "off"}.
  std::vector<std::pair<std::string, std::string>> settings;

  // When another process's server is running (and ready) on this base_dir,
  // use it instead of failing: Start() returns an object that does not own
  // the server (owns_server() is false; Stop() only forgets it). Its port and
  // settings are the running server's; port and settings here are then
  // ignored. Off by default, so that a test or a tool that must own its
  // server gets an error instead of someone else's.
  bool attach_to_running = false;
};

// A running (or attached-to) embedded server; see the file comment. Made by
// Start().
class EmbeddedPostgres {
 public:
  // Initializes the cluster if needed, recovers from a stale postmaster.pid
  // left by a killed server, starts postgres and waits until it answers.
  // One process at a time initializes and starts a base_dir's server (an
  // flock on base_dir/start.lock); a second one waits for the first, then
  // attaches to its server (attach_to_running) or fails as below.
  // Fails with a clear message (and the tail of server.log) otherwise:
  // kInvalidArgument for bad options, kFailedPrecondition when the server
  // cannot start (data directory still in use, bad setting, port taken),
  // kDeadlineExceeded when it does not answer within start_timeout. Never
  // leaves a server running on failure. May block for about 10 s when a
  // previous server on the same data directory is still shutting down.
  static Result<std::unique_ptr<EmbeddedPostgres>> Start(EmbeddedPostgresOptions options);

  // Stop(), ignoring its status.
  ~EmbeddedPostgres();

  EmbeddedPostgres(const EmbeddedPostgres&) = delete;
  EmbeddedPostgres& operator=(const EmbeddedPostgres&) = delete;

  // libpq URL over TCP with the password, e.g.
  // "postgresql://postgres:<password>@127.0.0.1:54321/postgres". A secret:
  // hand it to code and child processes, print display_url() instead.
  const std::string& url() const { return url_; }
  // url() with the password left out and the password file named instead,
  // e.g. "postgresql://postgres@127.0.0.1:54321/postgres?passfile=/abs/
  // base_dir/pgpass": for terminals and logs, and it still connects for
  // whoever may read that file.
  const std::string& display_url() const { return display_url_; }
  // The password file (base_dir/pgpass); empty when attached to a server
  // started before there was one.
  const std::string& password_file() const { return password_file_; }
  // libpq key/value string over the unix socket, with the password.
  const std::string& socket_conninfo() const { return socket_conninfo_; }
  // The server's TCP port on 127.0.0.1 (the running server's when attached).
  int port() const { return port_; }
  // The postmaster's pid (also when attached to another process's server);
  // -1 after Stop().
  pid_t pid() const { return pid_; }
  // False when Start() attached to a server another process started.
  bool owns_server() const { return owns_server_; }
  // The cluster's directory: base_dir/data.
  const std::string& data_dir() const { return data_dir_; }

  // Stops the server now: fast shutdown (SIGINT), waiting up to 30 s, then
  // SIGQUIT and SIGKILL. Reaps the process. Returns OK if the server shut
  // down cleanly (or was already stopped); idempotent. For a server we only
  // attached to, forgets it and leaves it running.
  Status Stop();

 private:
  EmbeddedPostgres() = default;
  std::string url_;
  std::string display_url_;
  std::string password_file_;
  std::string socket_conninfo_;
  std::string data_dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool owns_server_ = true;
};

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_EMBEDDED_POSTGRES_H_
