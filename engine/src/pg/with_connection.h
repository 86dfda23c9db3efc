// A fresh connection per operator call: the operator's calls (erasure, KEK
// rotation, the tools' commands and console) are rare, so they hold no pool.
// Nothing is prepared on it, so the named queries of the call run unprepared
// (pg::Exec sends their text).
#ifndef PHASEKEY_SRC_PG_WITH_CONNECTION_H_
#define PHASEKEY_SRC_PG_WITH_CONNECTION_H_

#include <exception>
#include <string>

#include <pqxx/pqxx>

#include "pg/conninfo.h"
#include "pg/db_failure.h"
#include "pg/statements.h"
#include "phasekey/status.h"

namespace phasekey::pg {

// Runs `fn(conn)` on a new connection to `url`, in StatementMode::kUnprepared;
// any exception becomes the classified Status.
template <class F>
Status WithConnection(const std::string& url, F&& fn) {
  const ScopedStatementMode unprepared(StatementMode::kUnprepared);
  try {
    pqxx::connection conn(HardenConnInfo(url, DatabaseOptions{}));
    fn(conn);
    return Status::OK();
  } catch (...) {
    return ToStatus(ClassifyDbException(std::current_exception(), CallStage::kCommitting, false));
  }
}

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_WITH_CONNECTION_H_
