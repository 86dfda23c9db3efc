#include "pg/transaction.h"

#include <pqxx/except>

namespace phasekey::pg {
namespace {

// Sent ahead of a COMMIT that has no queued statement before it: a
// statement the server refuses in an aborted block (SQLSTATE 25P02), where
// COMMIT alone would end the block as a ROLLBACK without an error. Costs no
// round trip: it travels in COMMIT's query.
constexpr const char* kAbortedBlockCheck = "SHOW transaction_read_only;";

}  // namespace

Tx::Tx(pqxx::connection_base& conn, Start start)
    : conn_(conn),
      work_(std::make_unique<pqxx::nontransaction>(conn)),
      begin_pending_(start == Start::kWithFirstStatement) {
  if (!begin_pending_) Send("BEGIN");
}

Tx::~Tx() noexcept {
  if (!ended_) abort();
}

pqxx::result Tx::Send(const std::string& sql) { return work_->exec(sql); }

pqxx::transaction_base& Tx::work() {
  if (begin_pending_ && !ended_) {
    begin_pending_ = false;  // a failed BEGIN leaves nothing open: ROLLBACK then only draws a warning
    Send("BEGIN");
  }
  return *work_;
}

pqxx::result Tx::ExecFirst(const std::string& sql) {
  if (!begin_pending_) return Send(sql);
  begin_pending_ = false;  // a failed first query leaves the block open or aborted: ROLLBACK either way
  return Send("BEGIN;" + sql);
}

void Tx::ExecWithCommit(const std::string& sql) {
  with_commit_ += sql;
  with_commit_ += "\n;";
}

void Tx::AppendLiteral(std::string* out, std::string_view value) {
  const std::string escaped = conn_.esc(value.data(), value.size());
  out->reserve(out->size() + escaped.size() + 2);
  *out += '\'';
  *out += escaped;
  *out += '\'';
}

void Tx::commit() {
  if (ended_) {
    throw pqxx::usage_error(phase_ended_it_ ? "commit of a transaction a phase ended (rolled back)"
                                            : "commit of a transaction that has ended");
  }
  if (begin_pending_ && with_commit_.empty()) {  // nothing was sent: nothing to commit
    Close();
    return;
  }
  // A transaction whose only statements were queued is one round trip.
  std::string query = begin_pending_ ? "BEGIN;" : "";
  query += with_commit_.empty() ? kAbortedBlockCheck : with_commit_;
  query += "COMMIT";
  begin_pending_ = false;
  with_commit_.clear();
  try {
    Send(query);
  } catch (...) {
    // A statement ahead of COMMIT failed, so COMMIT did not run and the
    // block is aborted: end it, so the connection goes back to the pool
    // idle. (Should COMMIT itself have failed, the server already ended the
    // block and this ROLLBACK only draws a warning; on a lost connection
    // abort() sends nothing.)
    abort();
    throw;
  }
  Close();
}

void Tx::abort() {
  if (ended_) return;
  with_commit_.clear();
  // A lost connection has no block left to end (and libpqxx would open a
  // new one to send ROLLBACK on).
  if (!begin_pending_ && conn_.is_open()) {
    try {
      RollBack();
    } catch (const std::exception&) {
      // The connection is broken (the pool discards it) or libpqxx refused.
    }
  }
  Close();
}

void Tx::RollBack() {
  try {
    Send("ROLLBACK");
  } catch (const pqxx::usage_error&) {
    // work() was closed (a phase ended it and EndPhase() did not run):
    // nothing was sent. Roll back through a new one.
    if (!ReopenIfClosed()) throw;
    Send("ROLLBACK");
  }
}

bool Tx::ReopenIfClosed() {
  std::unique_ptr<pqxx::nontransaction> fresh;
  try {
    fresh = std::make_unique<pqxx::nontransaction>(conn_);
  } catch (const pqxx::usage_error&) {
    return false;  // libpqxx allows one open transaction object per connection: work() is open
  }
  work_ = std::move(fresh);  // the closed one goes
  return true;
}

bool Tx::EndPhase() {
  if (ended_ || !ReopenIfClosed()) return false;
  phase_ended_it_ = true;
  abort();
  return true;
}

void Tx::Close() noexcept {
  ended_ = true;
  try {
    work_->abort();  // on a nontransaction: closes the object, sends nothing
  } catch (const std::exception&) {
    // Closed already (committed by a phase): nothing to close.
  }
}

std::string PrepareText(pqxx::connection_base& conn, const std::string& name, const std::string& text) {
  return "PREPARE " + conn.quote_name(name) + " AS " + text + ";";
}

std::string internal::ExecuteHead(pqxx::connection_base& conn, const std::string& name) {
  return "EXECUTE " + conn.quote_name(name) + "(";
}

}  // namespace phasekey::pg
