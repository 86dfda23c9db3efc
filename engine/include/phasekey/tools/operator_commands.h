// The operator's subcommands, for any binary that knows flows:
//
//   keys list [FILTERS] [--limit N]
//                             keys oldest first; FILTERS: --account A, --flow F,
//                             --state active|finished|dead|needs_operator, --recovery-point P,
//                             --error-class C (the class of the last error, as
//                             phasekey.error_class names it), --stuck, --older-than S,
//                             --newer-than S; an unknown state or class exits 2
//   keys show ACCOUNT KEY     every field, stored response, last error and its class, provider keys
//   keys retry ACCOUNT KEY    a dead-lettered key back to re-drive
//   keys release ACCOUNT KEY  frees a lease by hand (asks unless --yes; fenced)
//   keys retry|release --all-matching [FILTERS] [--dry-run | --confirm-count N]
//                             the same for every key FILTERS match: first the count (a
//                             dry run, changing nothing), then, with --confirm-count N,
//                             the action in one transaction with one audit row, only if
//                             exactly N keys still match (exit 4 and nothing changed
//                             otherwise); release frees only expired leases and those
//                             of the holders named with --owner-token
//   stats [--flows FILE]      counts per flow and state, oldest unfinished, dead letters, backlog,
//                             stranded keys (with flows: the binary's own or FILE's)
//   flows graph NAME [--format dot|svg|png] [--output FILE]
//   flows describe [--output FILE]
//                             the binary's flows as data (Flow::Describe), a JSON array
//   flows check [--flows FILE]
//                             the deploy gate (phasekey/deploy_gate.h): exit 1 listing the
//                             points of unfinished keys the flows do not know, 0 when none
//   reap --dry-run            what the reaper would delete
//   console [--listen A:P] [--token-file F] [--read-only]
//                             the operator console in the browser (docs/console.md)
//
// Tables by default, JSON with --json; errors on stderr with a non-zero exit.
// The database is --database-url, else $DATABASE_URL. `phasekey` offers
// them with no flows; an application (e.g. ride_booking) offers them with its
// own, from its own command line, whatever parser it uses:
//
//   for (const phasekey::OperatorCommand& c : phasekey::OperatorCommands()) {
//     if (argc > 1 && c.name == argv[1]) return phasekey::RunOperatorCommand("app", {argv + 1, argv + argc}, flows);
//   }
#ifndef PHASEKEY_TOOLS_OPERATOR_COMMANDS_H_
#define PHASEKEY_TOOLS_OPERATOR_COMMANDS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/flow.h"

namespace phasekey {

// One top-level operator command, for a binary's own --help.
struct OperatorCommand {
  std::string name;         // "keys"
  std::string description;  // one line
};

// The top-level operator commands ("keys", "stats", "reap", "flows",
// "console"), in the order they are listed.
std::vector<OperatorCommand> OperatorCommands();

// Parses and runs one operator command line. `args` are the words after the
// binary's name, the command first: {"keys", "list", "--json"}. `program`
// names the binary in help and usage text. Output goes to stdout, errors to
// stderr. Returns the process's exit status: 0 on success (and for --help),
// non-zero for a failed command (3: no such key) or a usage error. `flows`
// are the flows the binary knows (for `flows graph` and key checks).
int RunOperatorCommand(std::string_view program, const std::vector<std::string>& args,
                       std::vector<std::shared_ptr<const Flow>> flows);

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_OPERATOR_COMMANDS_H_
