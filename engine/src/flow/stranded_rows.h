// The deploy gate's stranded points (phasekey/deploy_gate.h) as JSON rows,
// for the operator's tools: `flows check --json`, `stats` and the console's
// overview show the same rows.
#ifndef PHASEKEY_SRC_FLOW_STRANDED_ROWS_H_
#define PHASEKEY_SRC_FLOW_STRANDED_ROWS_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "phasekey/deploy_gate.h"

namespace phasekey::admin {

// One row per point, in the order given: {"flow", "recovery_point", "keys",
// "longest_wait_s"}. An empty array for none.
nlohmann::json StrandedRows(const std::vector<StrandedPoint>& points);

}  // namespace phasekey::admin

#endif  // PHASEKEY_SRC_FLOW_STRANDED_ROWS_H_
