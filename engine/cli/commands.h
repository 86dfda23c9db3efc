// The subcommands of the `phasekey` command-line tool. Each registers itself
// on the CLI11 app; a failing subcommand prints one line on stderr and
// throws CLI::RuntimeError(exit_code), which main() turns into the exit
// status.
#ifndef PHASEKEY_CLI_COMMANDS_H_
#define PHASEKEY_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace phasekey::cli {

void RegisterMigrateCommand(CLI::App& app);
void RegisterEmbeddedPostgresCommand(CLI::App& app);
void RegisterWorkerCommand(CLI::App& app);
void RegisterCanonicalizeCommand(CLI::App& app);
void RegisterProvidersCommand(CLI::App& app);

// Prints "phasekey <command>: <message>" on stderr and throws
// CLI::RuntimeError(exit_code).
[[noreturn]] void Fail(std::string_view command, std::string_view message, int exit_code = 1);

}  // namespace phasekey::cli

#endif  // PHASEKEY_CLI_COMMANDS_H_
