#include "pg/db_failure.h"

#include <pqxx/except>

#include <array>

#include "pg/transaction.h"

namespace phasekey::pg {
namespace {

// 25006 read_only_sql_transaction: the server refused a write because it is
// (now) a standby or read-only, e.g. the old primary after a failover.
constexpr std::array<std::string_view, 8> kRetryableStates = {"40001", "40P01", "57P01", "57P02",
                                                              "57P03", "53300", "55P03", "25006"};
constexpr std::array<std::string_view, 2> kUnknownStates = {"40003", "08007"};

std::string OneLine(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

DbFailure ConnectionLost(std::string_view what, CallStage stage) {
  DbFailure f;
  f.message = OneLine(what);
  f.connection_unusable = true;
  f.kind = stage == CallStage::kCommitting ? DbFailureKind::kOutcomeUnknown : DbFailureKind::kRetryable;
  return f;
}

DbFailure FromSqlError(const pqxx::sql_error& e, CallStage stage) {
  DbFailure f;
  f.sqlstate = e.sqlstate();
  f.message = OneLine(e.what());
  f.kind = ClassifySqlState(f.sqlstate, stage);
  // A read-only server stays read-only for this connection: only a new one
  // (libpq's target_session_attrs=read-write) can find the primary.
  f.connection_unusable = f.sqlstate.starts_with("08") || f.sqlstate.starts_with("57P") || f.sqlstate == "25006";
  return f;
}

DbFailure Classify(std::exception_ptr e, CallStage stage) {
  // Order matters: the libpqxx 6.4 classes below are siblings of sql_error.
  try {
    std::rethrow_exception(e);
  } catch (const pqxx::in_doubt_error& ex) {
    DbFailure f = ConnectionLost(ex.what(), CallStage::kCommitting);
    return f;
  } catch (const pqxx::statement_completion_unknown& ex) {
    return {DbFailureKind::kOutcomeUnknown, "40003", OneLine(ex.what()), false, true};
  } catch (const pqxx::serialization_failure& ex) {
    return {DbFailureKind::kRetryable, "40001", OneLine(ex.what()), false, false};
  } catch (const pqxx::deadlock_detected& ex) {
    return {DbFailureKind::kRetryable, "40P01", OneLine(ex.what()), false, false};
  } catch (const pqxx::transaction_rollback& ex) {
    return {DbFailureKind::kRetryable, "40000", OneLine(ex.what()), false, false};
  } catch (const pqxx::too_many_connections& ex) {
    DbFailure f = ConnectionLost(ex.what(), CallStage::kBeforeCommit);
    f.sqlstate = "53300";
    return f;
  } catch (const pqxx::broken_connection& ex) {
    return ConnectionLost(ex.what(), stage);
  } catch (const pqxx::sql_error& ex) {
    return FromSqlError(ex, stage);
  } catch (const std::exception& ex) {
    return {DbFailureKind::kTerminal, "", OneLine(ex.what()), false, false};
  } catch (...) {
    return {DbFailureKind::kTerminal, "", "unknown non-standard exception", false, false};
  }
}

}  // namespace

DbFailureKind ClassifySqlState(std::string_view s, CallStage stage) {
  if (s == kFenceLostState) return DbFailureKind::kFenceLost;
  for (auto u : kUnknownStates) {
    if (s == u) return DbFailureKind::kOutcomeUnknown;
  }
  for (auto r : kRetryableStates) {
    if (s == r) return DbFailureKind::kRetryable;
  }
  if (s.starts_with("08")) {
    return stage == CallStage::kCommitting ? DbFailureKind::kOutcomeUnknown : DbFailureKind::kRetryable;
  }
  return DbFailureKind::kTerminal;
}

DbFailure ClassifyDbException(std::exception_ptr e, CallStage stage, bool deadline_fired) {
  DbFailure f = Classify(e, stage);
  if (deadline_fired) {
    f.deadline_exceeded = true;
    f.connection_unusable = true;
    f.kind = stage == CallStage::kCommitting ? DbFailureKind::kOutcomeUnknown : DbFailureKind::kRetryable;
  }
  return f;
}

Status ToStatus(const DbFailure& f) {
  std::string msg = f.message;
  if (!f.sqlstate.empty()) msg = "SQLSTATE " + f.sqlstate + ": " + msg;
  if (f.deadline_exceeded) {
    msg = "database call exceeded its deadline (" + msg + ")";
    if (f.kind == DbFailureKind::kOutcomeUnknown) return Status::OutcomeUnknown(msg + " while committing");
    return Status::DeadlineExceeded(msg);
  }
  switch (f.kind) {
    case DbFailureKind::kRetryable: return Status::Retryable(msg);
    case DbFailureKind::kOutcomeUnknown: return Status::OutcomeUnknown(msg);
    case DbFailureKind::kTerminal: return Status::Terminal(msg);
    case DbFailureKind::kFenceLost: return Status::FailedPrecondition(msg);
  }
  return Status::Terminal(msg);
}

}  // namespace phasekey::pg
