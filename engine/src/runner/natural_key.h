// The key of a request whose flow takes it from the request itself
// (KeySource in phasekey/flow.h).
#ifndef PHASEKEY_SRC_RUNNER_NATURAL_KEY_H_
#define PHASEKEY_SRC_RUNNER_NATURAL_KEY_H_

#include <string>

#include <nlohmann/json.hpp>

#include "phasekey/flow.h"
#include "phasekey/runner.h"
#include "phasekey/status.h"

namespace phasekey::runner {

// The key to record for `request` of `flow`: "<flow>:<value>", the value
// read from `body` (the canonical body, parsed) or from the request's path
// parameters as the flow's key source says. InvalidArgument with a message
// fit for the client when the request sends its own key, the value is
// missing, of the wrong type, empty, too long or holds control characters.
// Only for flows whose key_source().natural(). Thread-safe.
Result<std::string> NaturalKey(const Flow& flow, const Request& request, const nlohmann::json& body);

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_NATURAL_KEY_H_
