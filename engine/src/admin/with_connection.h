// A fresh connection per operator call: the operator's tools (the CLI's
// commands, the console) are rare, so they hold no pool.
#ifndef PHASEKEY_SRC_ADMIN_WITH_CONNECTION_H_
#define PHASEKEY_SRC_ADMIN_WITH_CONNECTION_H_

#include <exception>
#include <string>

#include <pqxx/pqxx>

#include "pg/conninfo.h"
#include "pg/db_failure.h"
#include "phasekey/status.h"

namespace phasekey::admin {

// Runs `fn(conn)` on a new connection to `url`; any exception becomes the
// classified Status.
template <class F>
Status WithConnection(const std::string& url, F&& fn) {
  try {
    pqxx::connection conn(pg::HardenConnInfo(url, DatabaseOptions{}));
    fn(conn);
    return Status::OK();
  } catch (...) {
    return pg::ToStatus(pg::ClassifyDbException(std::current_exception(), pg::CallStage::kCommitting, false));
  }
}

}  // namespace phasekey::admin

#endif  // PHASEKEY_SRC_ADMIN_WITH_CONNECTION_H_
