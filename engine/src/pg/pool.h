// Pool: a fixed-size pool of libpqxx connections with deadlines.
//
// libpqxx has no pool. This one opens connections lazily up to
// DatabaseOptions::pool_size, hands them out with a blocking Acquire() that
// gives up after checkout_timeout, registers the engine's named statements
// on each new connection, and throws away (never reuses) a connection that
// lost its link, hit a deadline, raised broken_connection or found its
// server read-only (SQLSTATE 25006: a standby).
//
// Failover: when a connection turns out unusable because of its server (lost
// link, server shut down, read-only; not a deadline), every idle connection
// is closed too, and every leased one is closed when returned: they were
// opened to the same server, most likely the old primary. New connections go
// through libpq, which with a multi-host URL and
// target_session_attrs=read-write finds the new primary.
//
// Transact() and Run() are the only places where database exceptions are
// caught and classified (see db_failure.h); callers get a Status.
//
// Thread-safety: all methods are thread-safe. A Lease is used by one thread
// at a time and must not outlive its Pool.
#ifndef PHASEKEY_SRC_PG_POOL_H_
#define PHASEKEY_SRC_PG_POOL_H_

#include <pqxx/connection>
#include <pqxx/transaction>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "pg/transaction.h"
#include "phasekey/database_options.h"
#include "phasekey/status.h"
#include "util/thread_annotations.h"

namespace phasekey::pg {

class Pool {
 public:
  // Called once on each new connection, e.g. to register prepared
  // statements (libpqxx prepares lazily, on first use). Not called when
  // DatabaseOptions::prepared_statements is false.
  using SetupFn = std::function<void(pqxx::connection&)>;

  // Registers every engine query of sql/queries as a prepared statement.
  static void PrepareEngineQueries(pqxx::connection& conn);

  // Checks the options and opens one connection to fail fast on a bad URL.
  static Result<std::unique_ptr<Pool>> Open(const DatabaseOptions& options, SetupFn setup = PrepareEngineQueries);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A checked-out connection, returned to the pool on destruction.
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    pqxx::connection& conn() { return *conn_; }
    // The connection is not to be reused: close it instead of returning it.
    void Discard() { discard_ = true; }

   private:
    friend class Pool;
    Lease(Pool* pool, std::unique_ptr<pqxx::connection> conn, std::uint64_t generation)
        : pool_(pool), conn_(std::move(conn)), generation_(generation) {}
    Pool* pool_;
    std::unique_ptr<pqxx::connection> conn_;
    std::uint64_t generation_;  // the pool's generation when the connection was opened
    bool discard_ = false;
  };

  // Waits up to checkout_timeout for a connection. kRetryable when none
  // became free or a new one could not be opened.
  Result<Lease> Acquire() EXCLUDES(mu_);

  // Runs `fn` in one READ COMMITTED transaction and commits it, all within
  // call_deadline. One attempt: the caller decides about retries from the
  // Status. Exceptions thrown by `fn` are classified like database ones,
  // except pg::Rollback, whose Status is returned; a fenced statement queued
  // with COMMIT that did not match its fence comes back as
  // kFailedPrecondition. `start`: see pg/transaction.h.
  Status Transact(const std::function<void(Tx&)>& fn, Tx::Start start = Tx::Start::kAtOnce);

  // Runs `fn` on a connection outside any transaction, within call_deadline.
  Status Run(const std::function<void(pqxx::connection&)>& fn);

  // Closes every idle connection now, and every leased one when it comes
  // back (connections opened from now on are kept). Called by Transact and
  // Run when a server fails a connection; thread-safe.
  void DiscardAllConnections() EXCLUDES(mu_);

  const DatabaseOptions& options() const { return options_; }
  // Connections currently open (idle or leased).
  std::size_t open_connections() const EXCLUDES(mu_);
  // Times DiscardAllConnections() ran (failovers and server restarts seen).
  std::uint64_t discards() const EXCLUDES(mu_);

 private:
  struct Idle {
    std::unique_ptr<pqxx::connection> conn;
    std::uint64_t generation;
  };
  Pool(DatabaseOptions options, SetupFn setup);
  // A new connection, prepared (statement mode kPrepared). Retryable when it
  // cannot be made; FailedPrecondition when its statements already exist on
  // the server session (PoolerRefusal).
  Result<std::unique_ptr<pqxx::connection>> Connect();
  Status PoolerRefusal(const std::string& what) const;
  void Return(std::unique_ptr<pqxx::connection> conn, std::uint64_t generation, bool discard) EXCLUDES(mu_);
  // After a failed call: discards the lease, and all connections when the
  // server was at fault.
  void AfterFailure(Lease& lease, bool connection_unusable, bool deadline_exceeded);

  const DatabaseOptions options_;
  const std::string conninfo_;
  const SetupFn setup_;
  const StatementMode mode_;  // set for the body of Transact() and Run()
  mutable Mutex mu_;
  std::condition_variable freed_;
  std::vector<Idle> idle_ GUARDED_BY(mu_);
  std::size_t open_ GUARDED_BY(mu_) = 0;
  std::uint64_t generation_ GUARDED_BY(mu_) = 0;  // DiscardAllConnections() calls so far
};

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_POOL_H_
