// The `keys` subcommands (key_commands.cc) as CLI11 subcommands of `app`.
// Private.
#ifndef PHASEKEY_TOOLS_SRC_COMMANDS_KEY_COMMANDS_H_
#define PHASEKEY_TOOLS_SRC_COMMANDS_KEY_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <vector>

#include "phasekey/flow.h"

namespace phasekey::commands {

// keys list, show, retry, release (each also as a batch by filter), erase,
// rotate-kek. `flows` is kept by the callbacks (provider keys in `keys show`).
void AddKeys(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows);

}  // namespace phasekey::commands

#endif  // PHASEKEY_TOOLS_SRC_COMMANDS_KEY_COMMANDS_H_
