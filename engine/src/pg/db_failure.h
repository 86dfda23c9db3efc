// The one place that classifies database failures.
//
// Every libpqxx exception the engine can see is turned into a DbFailure of
// one of three kinds, and from there into a Status:
//   retryable        the unit of work did not happen and may be run again:
//                    40001, 40P01, 57P01/57P02/57P03, 53300, 55P03, 25006
//                    (a read-only server: a standby, or the old primary after
//                    a failover), and a connection lost before COMMIT was sent;
//   outcome unknown  COMMIT may or may not have happened: in_doubt_error,
//                    40003, 08007, a connection lost (or a deadline hit)
//                    while committing. Never retried blindly;
//   terminal         everything else.
// libpqxx 6.4 trap: serialization_failure, deadlock_detected, in_doubt_error
// and broken_connection do not derive from sql_error and carry no SQLSTATE,
// so the order of the catch clauses matters (see db_failure.cc).
#ifndef PHASEKEY_SRC_PG_DB_FAILURE_H_
#define PHASEKEY_SRC_PG_DB_FAILURE_H_

#include <exception>
#include <string>
#include <string_view>

#include "phasekey/status.h"

namespace phasekey::pg {

// kFenceLost: a fenced statement sent with COMMIT matched no row (SQLSTATE
// PK001, pg/transaction.h): the lease was lost and nothing was committed.
enum class DbFailureKind { kRetryable, kOutcomeUnknown, kTerminal, kFenceLost };

struct DbFailure {
  DbFailureKind kind = DbFailureKind::kTerminal;
  std::string sqlstate;  // empty when libpqxx gave none
  std::string message;   // one line, for logs and Status
  bool deadline_exceeded = false;
  // The connection can no longer be trusted and must be thrown away, never
  // reused (libpqxx 6.4 would silently reconnect and lose session state).
  bool connection_unusable = false;
};

// SQLSTATE 42P05 (duplicate_prepared_statement) on a connection's first
// statements: its server session was another client's (a pooler in
// transaction mode; Pool refuses to start on it).
inline constexpr std::string_view kDuplicatePreparedStatement = "42P05";

// Where the failure happened: before COMMIT was sent or while committing.
enum class CallStage { kBeforeCommit, kCommitting };

// Classifies the exception `e` (from a catch block: std::current_exception()).
// `deadline_fired`: the watchdog shut the socket down during the call.
DbFailure ClassifyDbException(std::exception_ptr e, CallStage stage, bool deadline_fired);

// The kind of a server-reported SQLSTATE.
DbFailureKind ClassifySqlState(std::string_view sqlstate, CallStage stage);

// The Status a failure maps to (kRetryable, kOutcomeUnknown, kTerminal or
// kDeadlineExceeded).
Status ToStatus(const DbFailure& failure);

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_DB_FAILURE_H_
