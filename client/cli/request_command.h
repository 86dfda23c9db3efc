// `phasekey request`: curl for idempotent APIs, on the client library
// (client/include/phasekey/client). Lives beside client/ so that engine/
// never includes anything above it; phases/cli/main.cc registers it.
#ifndef PHASEKEY_CLIENT_CLI_REQUEST_COMMAND_H_
#define PHASEKEY_CLIENT_CLI_REQUEST_COMMAND_H_

#include <CLI/CLI.hpp>

namespace phasekey::cli {

// Exit status: 0 on a 2xx (its body on stdout); 1 on a final non-2xx (its
// body on stdout, status and problem on stderr); 2 on a usage error; 3 when
// no final answer came before the deadline, or the journal failed (the
// operation may or may not have happened: run the same command again).
void RegisterRequestCommand(CLI::App& app);

}  // namespace phasekey::cli

#endif  // PHASEKEY_CLIENT_CLI_REQUEST_COMMAND_H_
