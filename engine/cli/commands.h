// The subcommands of the `phasekey` command-line tool. Each registers itself
// on the CLI11 app; a failing subcommand prints one line on stderr and
// throws CLI::RuntimeError(exit_code), which Main() turns into the exit
// status.
//
// engine/cli holds the engine's commands only. The binary is assembled where
// every layer it shows is available (phases/cli/main.cc): it calls Main()
// with the registrars of the commands that live above the engine.
#ifndef PHASEKEY_CLI_COMMANDS_H_
#define PHASEKEY_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <string_view>
#include <vector>

namespace phasekey::cli {

void RegisterMigrateCommand(CLI::App& app);
void RegisterEmbeddedPostgresCommand(CLI::App& app);
void RegisterWorkerCommand(CLI::App& app);
void RegisterCanonicalizeCommand(CLI::App& app);

// Adds one or more subcommands to the app.
using CommandRegistrar = std::function<void(CLI::App& app)>;

// The `phasekey` tool: registers the engine's commands, then each of
// `more` in order, parses argv and runs the chosen command. Returns the
// process's exit status (0, a command's Fail() code, or CLI11's for a parse
// error or --help).
int Main(int argc, char** argv, const std::vector<CommandRegistrar>& more);

// Prints "phasekey <command>: <message>" on stderr and throws
// CLI::RuntimeError(exit_code).
[[noreturn]] void Fail(std::string_view command, std::string_view message, int exit_code = 1);

}  // namespace phasekey::cli

#endif  // PHASEKEY_CLI_COMMANDS_H_
