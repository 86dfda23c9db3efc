// One JSON object per line on stderr: the engine's structured log. Values
// are JSON-escaped, so no input can forge another line. Never pass tokens,
// card data or credentials.
#ifndef PHASEKEY_SRC_UTIL_JSON_LOG_H_
#define PHASEKEY_SRC_UTIL_JSON_LOG_H_

#include <nlohmann/json.hpp>

namespace phasekey {

// Adds "ts" (UTC, milliseconds) and writes `entry` as one line, atomically.
void LogJson(nlohmann::json entry);

}  // namespace phasekey

#endif  // PHASEKEY_SRC_UTIL_JSON_LOG_H_
