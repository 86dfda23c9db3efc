// The operator's commands (phasekey/tools/operator_commands.h) as CLI11
// subcommands, for binaries that parse with CLI11 themselves (`phasekey`,
// cli/). Private: CLI11 is not part of the public API.
#ifndef PHASEKEY_TOOLS_SRC_COMMANDS_OPERATOR_COMMANDS_CLI_H_
#define PHASEKEY_TOOLS_SRC_COMMANDS_OPERATOR_COMMANDS_CLI_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <vector>

#include "phasekey/flow.h"

namespace phasekey::admin {

// Adds keys, stats, reap and flows to `app`. A failing command prints one
// line on stderr and throws CLI::RuntimeError(exit code). `flows` is kept by
// the callbacks.
void AddOperatorCommands(CLI::App& app, std::vector<std::shared_ptr<const Flow>> flows);

}  // namespace phasekey::admin

#endif  // PHASEKEY_TOOLS_SRC_COMMANDS_OPERATOR_COMMANDS_CLI_H_
