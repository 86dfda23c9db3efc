#include "pg/pool.h"

#include <fmt/format.h>

#include <pqxx/nontransaction>
#include "pg/conninfo.h"

#include "pg/db_failure.h"
#include "pg/statements.h"
#include "pg/watchdog.h"
#include "sql/sql_catalog.h"

namespace phasekey::pg {
namespace {

Watchdog::Clock::time_point DeadlineFrom(const DatabaseOptions& o) { return Watchdog::Clock::now() + o.call_deadline; }

}  // namespace

void Pool::PrepareEngineQueries(pqxx::connection& conn) {
  std::string simple;  // one round trip for every simple-protocol query
  for (const auto& q : sql::EngineQueries()) {
    if (q.simple) {
      simple += PrepareText(conn, q.name, q.text);
    } else {
      conn.prepare(q.name, q.text);
    }
  }
  if (simple.empty()) return;
  pqxx::nontransaction session(conn);
  session.exec(simple);
}

Pool::Pool(DatabaseOptions options, SetupFn setup)
    : options_(std::move(options)),
      conninfo_(HardenConnInfo(options_.url, options_)),
      setup_(std::move(setup)),
      mode_(options_.prepared_statements ? StatementMode::kPrepared : StatementMode::kUnprepared) {}

Pool::~Pool() = default;

Result<std::unique_ptr<Pool>> Pool::Open(const DatabaseOptions& options, SetupFn setup) {
  if (options.url.empty()) return Status::InvalidArgument("database URL is empty");
  if (options.pool_size == 0) return Status::InvalidArgument("pool_size must be at least 1");
  if (options.call_deadline.count() <= 0 || options.checkout_timeout.count() < 0) {
    return Status::InvalidArgument("call_deadline must be positive and checkout_timeout not negative");
  }
  if (options.idle_in_transaction_timeout.count() < 0 ||
      (options.idle_in_transaction_timeout.count() > 0 &&
       options.idle_in_transaction_timeout <= options.call_deadline)) {
    return Status::InvalidArgument(fmt::format(
        "idle_in_transaction_timeout ({} ms) must exceed call_deadline ({} ms), or be 0 to keep the server's setting",
        options.idle_in_transaction_timeout.count(), options.call_deadline.count()));
  }
  std::unique_ptr<Pool> pool(new Pool(options, std::move(setup)));
  auto first = pool->Connect();
  if (!first) return first.error();
  if (pool->mode_ == StatementMode::kPrepared) {
    // Through a pooler in transaction mode, a second client gets the server
    // session the first one just left (PgBouncer hands out the most recently
    // used one), and its statements collide with the first's: refused here,
    // at start, rather than on every later connection (PoolerRefusal).
    auto second = pool->Connect();
    if (!second && second.error().code() == StatusCode::kFailedPrecondition) return second.error();
  }
  MutexLock lock(&pool->mu_);
  pool->idle_.push_back(Idle{std::move(*first), 0});
  pool->open_ = 1;
  return pool;
}

Result<std::unique_ptr<pqxx::connection>> Pool::Connect() {
  try {
    auto conn = std::make_unique<pqxx::connection>(conninfo_);
    if (mode_ == StatementMode::kPrepared && options_.idle_in_transaction_timeout.count() > 0) {
      ScopedStatementMode once(StatementMode::kUnprepared);  // run once per connection: not worth preparing
      pqxx::nontransaction session(*conn);
      Exec1(session, sql::q::PoolSessionSettings, std::to_string(options_.idle_in_transaction_timeout.count()));
    }
    if (setup_ && mode_ == StatementMode::kPrepared) setup_(*conn);
    return conn;
  } catch (...) {
    DbFailure f = ClassifyDbException(std::current_exception(), CallStage::kBeforeCommit, false);
    if (f.sqlstate == kDuplicatePreparedStatement) return PoolerRefusal(f.message);
    // A failed connect changed nothing.
    return Status::Retryable(fmt::format("cannot connect to {}: {}", RedactConnInfo(options_.url), f.message));
  }
}

// A new connection found the statements it prepares already there: its
// server session was another client's, which only a pooler in transaction
// (or statement) mode does. Retrying cannot help; the operator must turn
// prepared statements off.
Status Pool::PoolerRefusal(const std::string& what) const {
  return Status::FailedPrecondition(fmt::format(
      "{} reuses server sessions between clients ({}): a pooler in transaction mode such as PgBouncer is in front "
      "of PostgreSQL; run with --no-prepared-statements (DatabaseOptions::prepared_statements = false)",
      RedactConnInfo(options_.url), what));
}

Result<Pool::Lease> Pool::Acquire() {
  MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + options_.checkout_timeout;
  while (idle_.empty() && open_ >= options_.pool_size) {
    if (freed_.wait_until(lock.native(), deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= options_.pool_size) {
      return Status::Retryable(fmt::format("no free database connection within {} ms (pool size {})",
                                           options_.checkout_timeout.count(), options_.pool_size));
    }
  }
  if (!idle_.empty()) {
    Idle idle = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(idle.conn), idle.generation);
  }
  ++open_;
  const std::uint64_t generation = generation_;
  lock.Unlock();
  auto conn = Connect();
  if (!conn) {
    Return(nullptr, generation, true);
    return conn.error();
  }
  return Lease(this, std::move(*conn), generation);
}

void Pool::Return(std::unique_ptr<pqxx::connection> conn, std::uint64_t generation, bool discard) {
  {
    MutexLock lock(&mu_);
    if (discard || conn == nullptr || !conn->is_open() || generation != generation_) {
      --open_;
    } else {
      idle_.push_back(Idle{std::move(conn), generation});
      conn = nullptr;
    }
  }
  freed_.notify_one();
  // A discarded connection is closed here, outside the lock.
}

void Pool::DiscardAllConnections() {
  std::vector<Idle> closing;
  {
    MutexLock lock(&mu_);
    ++generation_;
    closing.swap(idle_);
    open_ -= closing.size();
  }
  freed_.notify_all();
  // The idle connections are closed here, outside the lock.
}

std::uint64_t Pool::discards() const {
  MutexLock lock(&mu_);
  return generation_;
}

void Pool::AfterFailure(Lease& lease, bool connection_unusable, bool deadline_exceeded) {
  if (!connection_unusable) return;
  lease.Discard();
  // A deadline says the call was slow, not that the server is gone.
  if (!deadline_exceeded) DiscardAllConnections();
}

std::size_t Pool::open_connections() const {
  MutexLock lock(&mu_);
  return open_;
}

Pool::Lease::Lease(Lease&& o) noexcept
    : pool_(o.pool_), conn_(std::move(o.conn_)), generation_(o.generation_), discard_(o.discard_) {
  o.pool_ = nullptr;
}

Pool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->Return(std::move(conn_), generation_, discard_);
}

Status Pool::Transact(const std::function<void(Tx&)>& fn, Tx::Start start) {
  auto lease = Acquire();
  if (!lease) return lease.error();
  auto guard = Watchdog::Global().Arm(lease->conn().sock(), DeadlineFrom(options_));
  ScopedStatementMode mode(mode_);
  CallStage stage = CallStage::kBeforeCommit;
  try {
    Tx txn(lease->conn(), start);
    fn(txn);
    stage = CallStage::kCommitting;
    txn.commit();
  } catch (const Rollback& rollback) {
    if (guard.Disarm()) lease->Discard();  // the deadline fired during the ROLLBACK
    return rollback.status;
  } catch (...) {
    const bool fired = guard.Disarm();
    DbFailure f = ClassifyDbException(std::current_exception(), stage, fired);
    AfterFailure(*lease, f.connection_unusable, f.deadline_exceeded);
    return ToStatus(f);
  }
  if (guard.Disarm()) lease->Discard();  // fired right after COMMIT returned
  return Status::OK();
}

Status Pool::Run(const std::function<void(pqxx::connection&)>& fn) {
  auto lease = Acquire();
  if (!lease) return lease.error();
  auto guard = Watchdog::Global().Arm(lease->conn().sock(), DeadlineFrom(options_));
  ScopedStatementMode mode(mode_);
  try {
    fn(lease->conn());
  } catch (...) {
    const bool fired = guard.Disarm();
    // Outside a transaction block every statement commits by itself, so a
    // lost link may have lost a commit.
    DbFailure f = ClassifyDbException(std::current_exception(), CallStage::kCommitting, fired);
    AfterFailure(*lease, f.connection_unusable, f.deadline_exceeded);
    return ToStatus(f);
  }
  if (guard.Disarm()) lease->Discard();
  return Status::OK();
}

}  // namespace phasekey::pg
