#include "commands/command_support.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "admin/table.h"
#include "seal/keyring.h"

namespace phasekey::commands {
namespace {

// Who runs this process, for the audit trail: the OS user name of the
// effective uid, or "uid N" when the user database has none.
std::string OsUser() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return "uid " + std::to_string(::geteuid());
}

}  // namespace

[[noreturn]] void Fail(const std::string& command, const std::string& message, int code) {
  std::fprintf(stderr, "phasekey %s: %s\n", command.c_str(), message.c_str());
  throw CLI::RuntimeError(code);
}

std::string Url(const Common& c, const std::string& command) {
  if (!c.database_url.empty()) return c.database_url;
  const char* env = std::getenv("DATABASE_URL");
  if (env != nullptr && *env != '\0') return env;
  Fail(command, "no database: pass --database-url or set DATABASE_URL");
}

void AddCommon(CLI::App* cmd, Common* c, bool buckets) {
  cmd->add_option("--database-url", c->database_url, "PostgreSQL URL (default: $DATABASE_URL)");
  cmd->add_flag("--json", c->json, "JSON instead of a table");
  if (buckets) {
    cmd->add_option("--buckets", c->buckets,
                    "a check: the bucket count the services use (default: the one stored in the database)")
        ->check(CLI::Range(1, 32767));
  }
}

// Who acts for the audit trail: --actor, else the OS user.
admin::Actor ActorOf(const std::string& actor) { return admin::Actor{actor.empty() ? OsUser() : actor}; }

void AddActor(CLI::App* cmd, std::string* actor) {
  cmd->add_option("--actor", *actor, "who acts, for the audit trail (phasekey.operator_audit; default: the OS user)");
}

// --kek-file and --kek-command, at most one of them; with `required`,
// exactly one; with `needs`, only together with that flag.
void AddKek(CLI::App* cmd, EncryptionOptions* kek, bool required, CLI::Option* needs) {
  CLI::Option_group* group = cmd->add_option_group("key-encryption keys");
  CLI::Option* file = group->add_option(
      "--kek-file", kek->kek_file,
      "the key-encryption keys: a file of '<id> <64 hex digits>' lines, the current one first, mode 0600");
  CLI::Option* command = group->add_option("--kek-command", kek->kek_command,
                                           "instead of --kek-file: a command (sh -c) that prints the same lines");
  if (required) {
    group->require_option(1);
  } else {
    group->require_option(0, 1);
  }
  if (needs != nullptr) {
    file->needs(needs);
    command->needs(needs);
  }
}

// The keyring of `kek` as a sealer (disabled without a source). Fails the
// command with the keyring's one-line error (exit 2).
std::unique_ptr<seal::Sealer> MustSealer(const std::string& command, const EncryptionOptions& kek) {
  if (!kek.enabled()) return std::make_unique<seal::Sealer>();
  auto ring = seal::LoadKeyring(kek);
  if (!ring) Fail(command, ring.error().ToString(), 2);
  return std::make_unique<seal::Sealer>(std::move(*ring), kek.data_key_cache);
}

void Print(const nlohmann::json& value, bool json, const std::vector<std::string>& columns) {
  if (json) {
    std::cout << value.dump(2) << "\n";
  } else {
    std::cout << admin::FormatTable(value, columns);
  }
}

}  // namespace phasekey::commands
