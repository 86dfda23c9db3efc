// The `phasekey` binary: the engine's commands (engine/cli) plus those that
// need the provider phases (`providers`) or the client library (`request`,
// client/cli). Assembled here, where phases/ is available, so that engine/
// depends on nothing above it.
#include "commands.h"
#include "providers_command.h"
#include "request_command.h"

int main(int argc, char** argv) {
  return phasekey::cli::Main(argc, argv,
                             {phasekey::cli::RegisterProvidersCommand, phasekey::cli::RegisterRequestCommand});
}
