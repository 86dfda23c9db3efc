// phasekey: the operator's command-line tool. One binary, subcommands.
// PHASEKEY_VERSION comes from the top-level project() (cli/CMakeLists.txt).
#include <cstdio>
#include <string>

#include "commands.h"
#include "commands/operator_commands_cli.h"

namespace phasekey::cli {

void Fail(std::string_view command, std::string_view message, int exit_code) {
  std::fprintf(stderr, "phasekey %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  throw CLI::RuntimeError(exit_code);
}

namespace {

int Main(int argc, char** argv) {
  CLI::App app{"phasekey: durable idempotency keys with recovery points on PostgreSQL", "phasekey"};
  app.set_version_flag("--version", "phasekey " PHASEKEY_VERSION, "print the version and exit");
  app.require_subcommand(1);
  phasekey::cli::RegisterMigrateCommand(app);
  phasekey::cli::RegisterEmbeddedPostgresCommand(app);
  phasekey::cli::RegisterWorkerCommand(app);
  phasekey::cli::RegisterCanonicalizeCommand(app);
  phasekey::cli::RegisterProvidersCommand(app);
  phasekey::cli::RegisterRequestCommand(app);
  // The phasekey binary knows no flows; applications register theirs.
  phasekey::admin::AddOperatorCommands(app, {});
  // Needs the adapters (phases/), which the operator commands' library does
  // not link.
  phasekey::cli::RegisterReconcileCommand(*app.get_subcommand("keys"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}

}  // namespace
}  // namespace phasekey::cli

int main(int argc, char** argv) { return phasekey::cli::Main(argc, argv); }
