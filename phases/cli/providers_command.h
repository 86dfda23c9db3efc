// `phasekey providers`: the payment gateway adapters of phasekey_phases and
// their idempotency facts. Lives beside phases/ so that engine/ never
// includes anything above it; phases/cli/main.cc registers it.
#ifndef PHASEKEY_PHASES_CLI_PROVIDERS_COMMAND_H_
#define PHASEKEY_PHASES_CLI_PROVIDERS_COMMAND_H_

#include <CLI/CLI.hpp>

namespace phasekey::cli {

void RegisterProvidersCommand(CLI::App& app);

}  // namespace phasekey::cli

#endif  // PHASEKEY_PHASES_CLI_PROVIDERS_COMMAND_H_
