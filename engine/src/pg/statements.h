// How the engine's named queries (sql/queries) reach the server.
//
// Prepared (the default): each is prepared once per connection, so the
// server parses and plans it once. Unprepared
// (DatabaseOptions::prepared_statements = false): each is sent with its text
// every time, as an unnamed statement, which is what a pooler in
// transaction mode needs when it cannot carry prepared statements from one
// server connection to the next (PgBouncer before 1.21 cannot carry any;
// no version carries SQL-level PREPARE).
//
// The mode is the pool's: Pool::Transact and Pool::Run set it for the
// calling thread while their body runs (ScopedStatementMode); engine code
// runs named queries only through Exec/Exec0/Exec1 and ExecuteText
// (transaction.h), which read it and take the query's typed handle
// (sql/query_ref.h). Code on a connection the pool did not prepare (the
// migrator, the operator commands) sets kUnprepared for its scope.
//
// Thread-safety: the mode is per thread.
#ifndef PHASEKEY_SRC_PG_STATEMENTS_H_
#define PHASEKEY_SRC_PG_STATEMENTS_H_

#include <pqxx/except>
#include <pqxx/transaction_base>

#include <string>
#include <vector>

#include "sql/sql_catalog.h"

namespace phasekey::pg {

enum class StatementMode { kPrepared, kUnprepared };

// The mode of the pool whose connection this thread is using; kPrepared
// outside Pool::Transact and Pool::Run.
StatementMode CurrentStatementMode();

// Sets this thread's mode for its lifetime, restoring the previous one.
class ScopedStatementMode {
 public:
  explicit ScopedStatementMode(StatementMode mode);
  ~ScopedStatementMode();
  ScopedStatementMode(const ScopedStatementMode&) = delete;
  ScopedStatementMode& operator=(const ScopedStatementMode&) = delete;

 private:
  StatementMode previous_;
};

// `text` with every parameter $1..$N outside quoted literals and comments
// replaced by literals[N-1], which must already be quoted SQL literals (or
// NULL). Throws pqxx::usage_error on a parameter beyond literals.
std::string SubstituteParameters(const std::string& text, const std::vector<std::string>& literals);

// Throws pqxx::usage_error when `text` holds more than one statement: a ';'
// outside quoted literals, quoted identifiers and comments with anything but
// blanks and comments after it. For statements a caller writes
// (AtomicContext::ExecAtCommit), which must not end the transaction or slip
// a second statement in; dollar-quoted text is not understood, so a ';'
// inside it is refused too.
void CheckOneStatement(const std::string& text);

// Runs the named engine query `query` (a handle sql::q::<Name>) with `args`
// as its parameters $1..$N: prepared (exec_prepared) or with its text
// (exec_params), by the thread's mode. The one way engine code runs a named
// query; it does not compile with a number of arguments other than N.
template <std::size_t N, class... Args>
pqxx::result Exec(pqxx::transaction_base& tx, sql::QueryRef<N> query, const Args&... args) {
  static_assert(sizeof...(Args) == N, "pg::Exec: the number of arguments differs from the query's parameters $1..$N");
  if (CurrentStatementMode() == StatementMode::kPrepared) return tx.exec_prepared(std::string(query.name), args...);
  return tx.exec_params(sql::Query(query), args...);
}

// Exec, expecting no row (pqxx::unexpected_rows otherwise), as exec_prepared0.
template <std::size_t N, class... Args>
pqxx::result Exec0(pqxx::transaction_base& tx, sql::QueryRef<N> query, const Args&... args) {
  pqxx::result r = Exec(tx, query, args...);
  if (!r.empty()) throw pqxx::unexpected_rows(std::string(query.name) + " returned rows, expected none");
  return r;
}

// Exec, expecting exactly one row, as exec_prepared1.
template <std::size_t N, class... Args>
pqxx::row Exec1(pqxx::transaction_base& tx, sql::QueryRef<N> query, const Args&... args) {
  pqxx::result r = Exec(tx, query, args...);
  if (r.size() != 1) {
    throw pqxx::unexpected_rows(std::string(query.name) + " returned " + std::to_string(r.size()) +
                                " rows, expected 1");
  }
  return r[0];
}

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_STATEMENTS_H_
