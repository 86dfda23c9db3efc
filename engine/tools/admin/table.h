// Output helpers of the operator commands: aligned text tables and records,
// Graphviz rendering.
#ifndef PHASEKEY_TOOLS_SRC_ADMIN_TABLE_H_
#define PHASEKEY_TOOLS_SRC_ADMIN_TABLE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasekey/flow.h"
#include "phasekey/status.h"

namespace phasekey::admin {

// An array of objects as an aligned table with `columns` (all keys of the
// first row when empty). Cells are single-line: control characters are
// shown as \uXXXX, so no value can forge a row.
std::string FormatTable(const nlohmann::json& rows, std::vector<std::string> columns);
// An object as "name: value" lines (nested values as compact JSON).
std::string FormatRecord(const nlohmann::json& object);
// The phase names of a flow's foreign phases.
std::vector<std::string> ForeignPhases(const Flow& flow);
// Writes DOT as is, or renders it with Graphviz `dot` (svg, png), to `path`
// or stdout when empty.
Status WriteGraph(const std::string& dot, const std::string& format, const std::string& path);

}  // namespace phasekey::admin

#endif  // PHASEKEY_TOOLS_SRC_ADMIN_TABLE_H_
