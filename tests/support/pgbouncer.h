// Debian's PgBouncer (/usr/sbin/pgbouncer) in front of a test's PostgreSQL,
// in transaction pooling mode on a free loopback port: for tests of what a
// transaction pooler changes (a session-level lock or setting outlives its
// client on a pooled server connection).
#ifndef PHASEKEY_TESTS_SUPPORT_PGBOUNCER_H_
#define PHASEKEY_TESTS_SUPPORT_PGBOUNCER_H_

#include <memory>
#include <string>

#include "phasekey/status.h"
#include "support/child_process.h"

namespace phasekey::testing {

inline constexpr char kPgBouncerPath[] = "/usr/sbin/pgbouncer";

struct PgBouncerOptions {
  // Server connections per (database, user) pair. 1 makes every client
  // share one server session, so whatever a client leaves in it shows.
  int pool_size = 1;
};

class PgBouncer {
 public:
  // Starts PgBouncer in front of the server of `server_url` (host, port and
  // user are taken from it; trust authentication) and waits until it
  // accepts connections. Fails when the binary is missing or it does not
  // come up; as root it runs as the `postgres` user (PgBouncer refuses root).
  static Result<std::unique_ptr<PgBouncer>> Start(const std::string& server_url, PgBouncerOptions options = {});
  // SIGTERM, reaps it, removes its directory.
  ~PgBouncer();
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  // `server_url` with host and port replaced by PgBouncer's.
  const std::string& url() const { return url_; }
  // What PgBouncer logged so far.
  std::string Log() const;
  // A shell command that restarts it: SIGTERM (immediate shutdown: every
  // client and server connection dropped, transactions in flight too),
  // waits until it is gone, and starts it again as a daemon on the same
  // port (the destructor stops that one too). For a chaos run's --event.
  const std::string& RestartCommand() const { return restart_; }

 private:
  PgBouncer() = default;
  std::string dir_;
  std::string url_;
  std::string restart_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_PGBOUNCER_H_
