// Tx: the engine's transaction, a READ COMMITTED, read-write backend
// transaction (what pqxx::work is) that can send its BEGIN together with its
// first statement and a last statement together with its COMMIT, so that
// neither costs a round trip of its own.
//
// Both ride in one simple-protocol query ("BEGIN;EXECUTE ..." and
// "EXECUTE ...;COMMIT"): PostgreSQL runs the statements of one query in
// order and stops at the first error, so a failed last statement means
// COMMIT never ran; Tx then rolls back and commit() throws that error.
// Statements sent this way are prepared with SQL PREPARE when the pool
// opens the connection (Pool::PrepareEngineQueries) and called with EXECUTE
// and quoted literals (quote()), or, unprepared, sent with their own text
// and the literals in place (statements.h).
//
// Contract: a Tx made with Start::kWithFirstStatement sends nothing until
// its first ExecFirst(); until then only ExecFirst() may run statements
// (exec_params and exec_prepared bypass the hook that sends BEGIN; a
// statement sent that way would run outside the transaction), which
// ExecFirst-less code cannot do by accident because the runner hands the
// Tx to phases only after the claim (see runner/phase_context.h).
//
// Thread-safety: like every libpqxx transaction, one thread at a time.
#ifndef PHASEKEY_SRC_PG_TRANSACTION_H_
#define PHASEKEY_SRC_PG_TRANSACTION_H_

#include <optional>
#include <pqxx/dbtransaction>
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

class Tx final : public pqxx::dbtransaction {
 public:
  enum class Start {
    kAtOnce,              // BEGIN is sent by the constructor, as pqxx::work does
    kWithFirstStatement,  // BEGIN travels with the first ExecFirst()
  };

  Tx(pqxx::connection_base& conn, Start start);
  ~Tx() noexcept override;
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;

  // Runs `sql` (simple protocol; literals quoted), preceded by BEGIN in the
  // same round trip when BEGIN has not been sent yet. Throws like exec().
  pqxx::result ExecFirst(const std::string& sql);

  // Queues `sql` (simple protocol, no result wanted) to run just before
  // COMMIT in the same round trip. Statements queued are run in order.
  void ExecWithCommit(const std::string& sql);

  bool begin_pending() const { return begin_pending_; }

  // Appends `value` to `out` as a quoted SQL literal, escaped by libpq for
  // this connection (PQescapeStringConn: its encoding and
  // standard_conforming_strings), without the copies tx.quote() makes.
  // Throws pqxx::argument_error on text invalid in the connection's encoding.
  void AppendLiteral(std::string* out, std::string_view value);

  // For a transaction that wrote nothing (a replay, a 409, a 422): commit()
  // sends its COMMIT without waiting for the answer, so the caller's answer
  // does not wait a round trip for it. The server ends the transaction as
  // soon as it reads the COMMIT, so nothing stays open or locked, with or
  // without PgBouncer between; libpq's next synchronous call on the
  // connection reads and drops the answer (PQexecStart), and a connection
  // that broke meanwhile fails that call and is discarded as usual. Call
  // before commit() and only when no statement was queued for it.
  void EndWithoutWaiting() { end_without_waiting_ = true; }

  // While on, the transaction belongs to a phase (AtomicContext::tx()),
  // which must not end it: commit() rolls the transaction back instead and
  // throws std::logic_error, abort() rolls it back; either way nothing of it
  // is kept (a deferred claim's key row was never sent) and
  // phase_ended_it() turns true. The engine then fails the phase as a bug.
  void GuardPhase(bool on) { phase_guard_ = on; }
  bool phase_ended_it() const { return phase_ended_it_; }

 private:
  void do_begin() override;
  void do_commit() override;
  void do_abort() override;
  void SendWithoutWaiting(const char* sql);  // PQsendQuery; throws broken_connection

  bool begin_pending_;
  bool end_without_waiting_ = false;
  bool phase_guard_ = false;
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

// The text that runs the simple-protocol named query `name` with each
// argument as a quoted literal (an empty optional is NULL):
// "EXECUTE <name>(<arguments>)" when statements are prepared, else the
// query's own text with the literals in place of its parameters (see
// statements.h). The only way engine code builds statement text.
template <class... Args>
std::string ExecuteText(Tx& tx, const std::string& name, const Args&... args) {
  if (CurrentStatementMode() == StatementMode::kUnprepared) {
    std::vector<std::string> literals(sizeof...(args));
    std::size_t i = 0;
    (internal::AppendLiteral(tx, &literals[i++], args), ...);
    return SubstituteParameters(sql::Query(name), literals);
  }
  std::string out = internal::ExecuteHead(tx.conn(), name);
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
