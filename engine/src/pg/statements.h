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
// (transaction.h), which read it.
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

// Runs the named engine query `name` with `args` as its parameters.
template <class... Args>
pqxx::result Exec(pqxx::transaction_base& tx, const std::string& name, const Args&... args) {
  if (CurrentStatementMode() == StatementMode::kPrepared) return tx.exec_prepared(name, args...);
  return tx.exec_params(sql::Query(name), args...);
}

// Exec, expecting no row (pqxx::unexpected_rows otherwise), as exec_prepared0.
template <class... Args>
pqxx::result Exec0(pqxx::transaction_base& tx, const std::string& name, const Args&... args) {
  pqxx::result r = Exec(tx, name, args...);
  if (!r.empty()) throw pqxx::unexpected_rows(name + " returned rows, expected none");
  return r;
}

// Exec, expecting exactly one row, as exec_prepared1.
template <class... Args>
pqxx::row Exec1(pqxx::transaction_base& tx, const std::string& name, const Args&... args) {
  pqxx::result r = Exec(tx, name, args...);
  if (r.size() != 1) throw pqxx::unexpected_rows(name + " returned " + std::to_string(r.size()) + " rows, expected 1");
  return r[0];
}

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_STATEMENTS_H_
