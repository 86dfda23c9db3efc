#include "pg/transaction.h"

#include <pqxx/except>
#include <pqxx/isolation>
#include <pqxx/largeobject>

#include <stdexcept>

#include <libpq-fe.h>

namespace phasekey::pg {
namespace {

// libpqxx 6.4 hands out a transaction's PGconn only to pqxx::largeobject
// and its subclasses; this one exists for that alone.
struct RawConnection : pqxx::largeobject {
  using pqxx::largeobject::raw_connection;
};

}  // namespace

void Tx::SendWithoutWaiting(const char* sql) {
  PGconn* raw = RawConnection::raw_connection(*this);
  if (PQsendQuery(raw, sql) != 1) throw pqxx::broken_connection(PQerrorMessage(raw));
}

void Tx::AppendLiteral(std::string* out, std::string_view value) {
  PGconn* raw = RawConnection::raw_connection(*this);
  const std::size_t start = out->size();
  out->resize(start + 2 * value.size() + 3);  // what PQescapeStringConn may need, the quotes and its NUL
  char* to = out->data() + start;
  *to++ = '\'';
  int error = 0;
  const std::size_t written = PQescapeStringConn(raw, to, value.data(), value.size(), &error);
  if (error != 0) {
    out->resize(start);
    throw pqxx::argument_error(PQerrorMessage(raw));
  }
  to[written] = '\'';
  out->resize(start + 1 + written + 1);
}

Tx::Tx(pqxx::connection_base& conn, Start start)
    : pqxx::internal::namedclass{"phasekey::Tx"},
      pqxx::dbtransaction(conn, pqxx::isolation_traits<pqxx::read_committed>::name(), pqxx::read_write),
      begin_pending_(start == Start::kWithFirstStatement) {
  Begin();  // calls do_begin(), which sends BEGIN unless it is to wait
}

Tx::~Tx() noexcept { End(); }

void Tx::do_begin() {
  if (!begin_pending_) pqxx::dbtransaction::do_begin();
}

pqxx::result Tx::ExecFirst(const std::string& sql) {
  if (!begin_pending_) return exec(sql);
  begin_pending_ = false;  // a failed first query leaves the block open or aborted: ROLLBACK either way
  return exec("BEGIN;" + sql);
}

void Tx::ExecWithCommit(const std::string& sql) {
  with_commit_ += sql;
  with_commit_ += ';';
}

void Tx::do_commit() {
  if (phase_guard_) {
    // A phase called commit(): keep nothing (the queued statements, a
    // deferred claim's key row among them, are dropped unsent).
    phase_ended_it_ = true;
    with_commit_.clear();
    if (!begin_pending_) direct_exec("ROLLBACK");
    throw std::logic_error("a phase may not commit its transaction: the engine commits it with the key's move");
  }
  if (with_commit_.empty()) {
    if (begin_pending_) return;  // nothing was sent: nothing to commit
    if (end_without_waiting_) {
      SendWithoutWaiting("COMMIT");
    } else {
      direct_exec("COMMIT");
    }
    return;
  }
  // A transaction whose only statements were queued is one round trip.
  const std::string query = (begin_pending_ ? "BEGIN;" : "") + with_commit_ + "COMMIT";
  begin_pending_ = false;
  try {
    direct_exec(query.c_str());
  } catch (const pqxx::sql_error&) {
    // A queued statement failed, so COMMIT did not run and the block is
    // aborted: end it, so the connection goes back to the pool idle. (Should
    // COMMIT itself have failed, the server already ended the block and
    // this ROLLBACK only draws a warning.)
    try {
      direct_exec("ROLLBACK");
    } catch (...) {
      // The connection is broken: the pool discards it.
    }
    throw;
  }
}

std::string PrepareText(pqxx::connection_base& conn, const std::string& name, const std::string& text) {
  return "PREPARE " + conn.quote_name(name) + " AS " + text + ";";
}

std::string internal::ExecuteHead(pqxx::connection_base& conn, const std::string& name) {
  return "EXECUTE " + conn.quote_name(name) + "(";
}

void Tx::do_abort() {
  if (phase_guard_) phase_ended_it_ = true;  // a phase called abort(): rolled back here, and the phase fails
  with_commit_.clear();
  if (begin_pending_) return;  // BEGIN was never sent
  pqxx::dbtransaction::do_abort();
}

}  // namespace phasekey::pg
