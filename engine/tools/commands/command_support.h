// What the operator's subcommands share (operator_commands.cc,
// key_commands.cc): the database flags, failing in one line, the audit
// trail's actor, key-encryption keys, tables or JSON. Private.
#ifndef PHASEKEY_TOOLS_SRC_COMMANDS_COMMAND_SUPPORT_H_
#define PHASEKEY_TOOLS_SRC_COMMANDS_COMMAND_SUPPORT_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "admin/key_admin.h"
#include "phasekey/data_protection.h"
#include "phasekey/status.h"
#include "seal/sealer.h"

namespace phasekey::commands {

struct Common {
  std::string database_url;
  bool json = false;
  int buckets = 0;  // 0: the deployment's, from the database
};

// Prints "phasekey COMMAND: MESSAGE" on stderr and ends the command with
// exit status `code` (CLI::RuntimeError).
[[noreturn]] void Fail(const std::string& command, const std::string& message, int code = 1);
// --database-url, else $DATABASE_URL; fails the command without either.
std::string Url(const Common& c, const std::string& command);
// --database-url and --json; with `buckets`, --buckets.
void AddCommon(CLI::App* cmd, Common* c, bool buckets);

// The value, or the command fails with the error: exit 3 for NotFound, 1
// otherwise.
template <class T>
T Must(Result<T> r, const std::string& command) {
  if (!r) Fail(command, r.error().ToString(), r.error().code() == StatusCode::kNotFound ? 3 : 1);
  return std::move(r).value();
}

// Who acts for the audit trail: `actor`, else the OS user.
admin::Actor ActorOf(const std::string& actor);
void AddActor(CLI::App* cmd, std::string* actor);

// --kek-file and --kek-command, at most one of them; with `required`,
// exactly one; with `needs`, only together with that flag.
void AddKek(CLI::App* cmd, EncryptionOptions* kek, bool required, CLI::Option* needs = nullptr);
// The keyring of `kek` as a sealer (disabled without a source). Fails the
// command with the keyring's one-line error (exit 2).
std::unique_ptr<seal::Sealer> MustSealer(const std::string& command, const EncryptionOptions& kek);

// `value` as JSON (`json`) or as a table of `columns`.
void Print(const nlohmann::json& value, bool json, const std::vector<std::string>& columns);

}  // namespace phasekey::commands

#endif  // PHASEKEY_TOOLS_SRC_COMMANDS_COMMAND_SUPPORT_H_
