// Tx: the engine's transaction, a backend transaction block that Tx begins
// and ends itself, with BEGIN, COMMIT and ROLLBACK sent as statements through
// a pqxx::nontransaction it owns (libpqxx's public class for statements it
// does not wrap in a transaction of its own). BEGIN takes the server's
// defaults, READ COMMITTED and read-write unless the database or role says
// otherwise, as pqxx::work's BEGIN does. Nothing here subclasses a libpqxx
// class or reaches into libpqxx's internals (issue 31), so a new libpqxx
// cannot change it under us.
//
// BEGIN can travel with the first statement and the last statements with
// COMMIT, so that neither costs a round trip of its own. Both ride in one
// simple-protocol query ("BEGIN;EXECUTE ..." and "EXECUTE ...;COMMIT"):
// PostgreSQL runs the statements of one query in order and stops at the
// first error, so a failed last statement means COMMIT never ran (a fenced
// one raises kFenceLostState); Tx then rolls back and commit() throws that
// error. Statements sent this way are prepared with SQL PREPARE when the
// pool opens the connection (Pool::PrepareEngineQueries) and called with
// EXECUTE and quoted literals (AppendLiteral()), or, unprepared, sent with
// their own text and the literals in place (statements.h).
//
// Other statements run through work(), the libpqxx transaction object
// (pg::Exec(tx, ...), tx.work().exec(...)); a Tx converts to it, so code
// written for a pqxx::transaction_base& takes a Tx. A failed statement
// leaves the block aborted (the server refuses every later statement with
// SQLSTATE 25P02): a body that catches the failure and goes on cannot get
// the rollback reported as a commit, because a lone COMMIT travels behind a
// statement the server refuses in an aborted block, so commit() throws.
//
// A Tx made with Start::kWithFirstStatement sends nothing until a statement
// needs the block: ExecFirst() sends BEGIN in its own query, work() sends
// BEGIN alone first (a statement through it then runs inside the block, never
// on its own), and a Tx whose only statements were queued with
// ExecWithCommit() sends BEGIN, them and COMMIT as one query. So an atomic
// phase whose statements all travel with COMMIT (AtomicContext::ExecAtCommit)
// costs one round trip, its key's move included.
//
// Phases: AtomicContext::tx() hands an atomic phase work(), which the phase
// must not end. libpqxx lets it call commit() or abort() on it; on a
// nontransaction either only closes the libpqxx object (nothing reaches the
// server) and later use throws pqxx::usage_error. EndPhase() finds out, rolls
// the block back at once (nothing of it kept: a deferred claim's key row was
// never sent) and returns true; the engine then fails the phase as a bug.
//
// Thread-safety: like every libpqxx transaction, one thread at a time.
#ifndef PHASEKEY_SRC_PG_TRANSACTION_H_
#define PHASEKEY_SRC_PG_TRANSACTION_H_

#include <memory>
#include <optional>
#include <pqxx/nontransaction>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pg/statements.h"
#include "phasekey/status.h"

namespace phasekey::pg {

// Thrown by the body of a transaction (Pool::Transact,
// runner::KeyStore::Transact) to roll it back on purpose. Transact returns
// `status`, which must not be OK, and keeps the connection: a rollback on
// purpose says nothing about the database. The engine's only sentinel.
struct Rollback {
  Status status;
};

class Tx final {
 public:
  enum class Start {
    kAtOnce,              // BEGIN is sent by the constructor, as pqxx::work does
    kWithFirstStatement,  // BEGIN travels with the first ExecFirst()
  };

  // `conn` must have no libpqxx transaction open, and outlive the Tx.
  Tx(pqxx::connection_base& conn, Start start);
  // Rolls back a block that commit() did not end (errors ignored: a broken
  // connection is discarded by the pool).
  ~Tx() noexcept;
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;

  // The libpqxx transaction the statements run in. Its commit() and abort()
  // end nothing on the server: use the Tx's.
  // Sends BEGIN first when it is still pending (a round trip of its own).
  pqxx::transaction_base& work();
  operator pqxx::transaction_base&() { return work(); }  // NOLINT(google-explicit-constructor): Tx is used as one
  pqxx::connection_base& conn() const { return conn_; }

  // Runs `sql` (simple protocol; literals quoted), preceded by BEGIN in the
  // same round trip when BEGIN has not been sent yet. Throws like exec().
  pqxx::result ExecFirst(const std::string& sql);

  // Queues `sql` (simple protocol, no result wanted) to run just before
  // COMMIT in the same round trip. Statements queued are run in order. Each
  // is ended by a line break and ';', so a trailing -- comment cannot hide
  // what follows it.
  void ExecWithCommit(const std::string& sql);

  // Sends the queued statements and COMMIT (nothing at all when nothing was
  // sent or queued). When a statement of that query fails, COMMIT did not
  // run: rolls back and rethrows its error (SQLSTATE 25P02 when an earlier
  // failure had aborted the block). A lost connection throws
  // pqxx::broken_connection: the outcome is unknown. Throws
  // pqxx::usage_error once the Tx has ended.
  void commit();
  // Rolls back (sends nothing when nothing was sent). Quiet on a Tx that
  // has ended, and on errors, as libpqxx's abort() is.
  void abort();

  bool begin_pending() const { return begin_pending_; }

  // Appends `value` to `out` as a quoted SQL literal, escaped by libpq for
  // this connection (PQescapeStringConn through pqxx's esc(): its encoding
  // and standard_conforming_strings). Throws pqxx::argument_error on text
  // invalid in the connection's encoding.
  void AppendLiteral(std::string* out, std::string_view value);

  // Called after a phase had work() (AtomicContext::tx()): true when the
  // phase closed it with commit() or abort(). The block is then rolled
  // back and the Tx has ended; phase_ended_it() stays true. False, with
  // nothing sent, when the phase left it open. Costs no round trip: it
  // asks libpqxx to open a second transaction object on the connection,
  // which libpqxx refuses (pqxx::usage_error, caught) while work() is open.
  bool EndPhase();
  bool phase_ended_it() const { return phase_ended_it_; }

 private:
  pqxx::result Send(const std::string& sql);  // through work(); the only statement call
  // Replaces work() by a new nontransaction if work() was closed (by a
  // phase); false when it is open.
  bool ReopenIfClosed();
  void RollBack();
  void Close() noexcept;  // closes work() (sends nothing) and ends the Tx

  pqxx::connection_base& conn_;
  std::unique_ptr<pqxx::nontransaction> work_;
  bool begin_pending_;
  bool ended_ = false;
  bool phase_ended_it_ = false;
  std::string with_commit_;
};

// The SQLSTATE a fenced statement sent with COMMIT raises when its fence
// did not match (sql/migrations/0007): the lease was lost.
inline constexpr std::string_view kFenceLostState = "PK001";

// "PREPARE <name> AS <text>;": how the pool prepares a simple-protocol
// named query (sql/sql_catalog.h) on a new connection.
std::string PrepareText(pqxx::connection_base& conn, const std::string& name, const std::string& text);

namespace internal {
std::string ExecuteHead(pqxx::connection_base& conn, const std::string& name);
inline void AppendLiteral(Tx& tx, std::string* out, const std::string& v) { tx.AppendLiteral(out, v); }
inline void AppendLiteral(Tx& tx, std::string* out, const std::optional<std::string>& v) {
  if (v) {
    tx.AppendLiteral(out, *v);
  } else {
    *out += "NULL";
  }
}
// Integers as quoted literals, as tx.quote() writes them: digits need no
// escaping.
template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
void AppendLiteral(Tx&, std::string* out, T v) {
  *out += '\'';
  *out += std::to_string(v);
  *out += '\'';
}
inline void AppendLiteral(Tx&, std::string* out, bool v) { *out += v ? "'true'" : "'false'"; }
}  // namespace internal

// The text that runs the simple-protocol named query `query` (a handle
// sql::q::<Name>) with each argument as a quoted literal (an empty optional
// is NULL): "EXECUTE <name>(<arguments>)" when statements are prepared, else
// the query's own text with the literals in place of its parameters (see
// statements.h). The only way engine code builds statement text; like
// pg::Exec, it does not compile with a number of arguments other than N.
template <std::size_t N, class... Args>
std::string ExecuteText(Tx& tx, sql::QueryRef<N> query, const Args&... args) {
  static_assert(sizeof...(Args) == N,
                "pg::ExecuteText: the number of arguments differs from the query's parameters $1..$N");
  if (CurrentStatementMode() == StatementMode::kUnprepared) {
    std::vector<std::string> literals(sizeof...(args));
    std::size_t i = 0;
    (internal::AppendLiteral(tx, &literals[i++], args), ...);
    return SubstituteParameters(sql::Query(query), literals);
  }
  std::string out = internal::ExecuteHead(tx.conn(), std::string(query.name));
  bool first = true;
  auto append = [&](const auto& arg) {
    if (!first) out += ',';
    first = false;
    internal::AppendLiteral(tx, &out, arg);
  };
  (append(args), ...);
  out += ')';
  return out;
}

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_TRANSACTION_H_
