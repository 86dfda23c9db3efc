// The `console` operator command (console_command.cc), added by
// AddOperatorCommands.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_COMMAND_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <vector>

#include "phasekey/flow.h"

namespace phasekey::admin {

void AddConsole(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows);

}  // namespace phasekey::admin

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_COMMAND_H_
