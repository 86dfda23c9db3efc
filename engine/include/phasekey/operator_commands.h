// The operator's subcommands, for any binary that knows flows:
//
//   keys list [--account A] [--flow F] [--state active|finished|dead] [--stuck] [--older-than S]
//   keys show ACCOUNT KEY     every field, stored response, last error, provider keys
//   keys retry ACCOUNT KEY    a dead-lettered key back to re-drive
//   keys release ACCOUNT KEY  frees a lease by hand (asks unless --yes; fenced)
//   stats                     counts per flow and state, oldest unfinished, dead letters, backlog
//   flows graph NAME [--format dot|svg|png] [--output FILE]
//   reap --dry-run            what the reaper would delete
//
// Tables by default, JSON with --json; errors on stderr with a non-zero exit
// (thrown as CLI::RuntimeError). The database is --database-url, else
// $DATABASE_URL. `phasekey` registers them with no flows; an application
// (e.g. ride_booking) registers them with its own.
#ifndef PHASEKEY_OPERATOR_COMMANDS_H_
#define PHASEKEY_OPERATOR_COMMANDS_H_

#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "phasekey/flow.h"

namespace phasekey {

// `flows` must stay alive while `app` parses and runs.
void AddOperatorCommands(CLI::App& app, std::vector<std::shared_ptr<const Flow>> flows);

}  // namespace phasekey

#endif  // PHASEKEY_OPERATOR_COMMANDS_H_
