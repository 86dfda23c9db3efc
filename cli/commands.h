// The subcommands of the `phasekey` command-line tool. Each registers itself
// on the CLI11 app; a failing subcommand prints one line on stderr and
// throws CLI::RuntimeError(exit_code), which main() (main.cc) turns into the exit
// status.
//
// cli/ is the one place the binary is assembled: it depends on the engine's
// core and tools, phases/ and client/, and nothing depends on it.
#ifndef PHASEKEY_CLI_COMMANDS_H_
#define PHASEKEY_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <string_view>

namespace phasekey::cli {

void RegisterMigrateCommand(CLI::App& app);
void RegisterEmbeddedPostgresCommand(CLI::App& app);
void RegisterWorkerCommand(CLI::App& app);
void RegisterCanonicalizeCommand(CLI::App& app);

// `phasekey providers`: the payment gateway adapters of phasekey_phases and
// their idempotency facts.
void RegisterProvidersCommand(CLI::App& app);
// `phasekey request`: curl for idempotent APIs, on the client library.
// Exit status: 0 on a 2xx (its body on stdout); 1 on a final non-2xx (its
// body on stdout, status and problem on stderr); 2 on a usage error; 3 when
// no final answer came before the deadline, or the journal failed (the
// operation may or may not have happened: run the same command again).
void RegisterRequestCommand(CLI::App& app);

// `phasekey keys reconcile`, added to the operator commands' `keys`: after
// a restore, the provider's operations since a time that no key row of the
// database made (reconcile_command.cc says how and its exit statuses).
void RegisterReconcileCommand(CLI::App& keys);

// Prints "phasekey <command>: <message>" on stderr and throws
// CLI::RuntimeError(exit_code).
[[noreturn]] void Fail(std::string_view command, std::string_view message, int exit_code = 1);

}  // namespace phasekey::cli

#endif  // PHASEKEY_CLI_COMMANDS_H_
