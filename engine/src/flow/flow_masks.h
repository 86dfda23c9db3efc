// The masked fields of flows (Flow::masked()) in the database, table
// phasekey.flow_masks (sql/migrations/0001_baseline.sql), so that the
// operator's tools, which do not link the application's flows (the
// `phasekey` CLI, the console), mask the same fields as the application.
//
// Runner::Open records its flows' pointers; the tools load them all and
// pass a flow's pointers to MaskJson (flow/masking.h). Each flow has one
// row, written by the last process started with it: during a rolling deploy
// that changes a flow's masks, the row follows whichever version started
// last.
//
// Both run their named query (sql/queries/flow_masks.sql) unprepared, so
// they work on any connection: a pool's, or an operator tool's own.
// Database errors are thrown as by any statement on `tx`; the caller's
// transaction (Pool::Transact, admin::WithConnection) classifies them.
#ifndef PHASEKEY_SRC_FLOW_FLOW_MASKS_H_
#define PHASEKEY_SRC_FLOW_FLOW_MASKS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <pqxx/transaction_base>

#include "phasekey/flow.h"
#include "phasekey/status.h"

namespace phasekey::flow {

// Records each flow's masked() in `tx`, an empty array for a flow that
// masks nothing (so that a flow which stops masking a field stops being
// masked, and a flow without masks is told from one never recorded). Writes
// only rows that are missing or differ: a restart with the same flows
// writes nothing. Rows of flows not in `flows` are kept. InvalidArgument
// (nothing written) for two flows of one name.
Status RecordFlowMasks(pqxx::transaction_base& tx, const std::vector<std::shared_ptr<const Flow>>& flows);

// Every recorded flow's pointers, by flow name (flows recorded without
// masks map to an empty vector).
std::map<std::string, std::vector<std::string>> LoadFlowMasks(pqxx::transaction_base& tx);

}  // namespace phasekey::flow

#endif  // PHASEKEY_SRC_FLOW_FLOW_MASKS_H_
