// Implements phasekey/tools/operator_commands.h and admin/operator_commands_cli.h:
// CLI wiring and output.
#include "phasekey/tools/operator_commands.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "admin/key_admin.h"
#include "admin/table.h"
#include "commands/operator_commands_cli.h"
#include "console/console_command.h"
#include "console/console_queries.h"
#include "flow/stranded_rows.h"
#include "pg/statements.h"
#include "phasekey/data_protection.h"
#include "phasekey/deploy_gate.h"
#include "seal/keyring.h"
#include "seal/sealer.h"

namespace phasekey {
namespace {

struct Common {
  std::string database_url;
  bool json = false;
  int buckets = 0;  // 0: the deployment's, from the database
};

[[noreturn]] void Fail(const std::string& command, const std::string& message, int code = 1) {
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

template <class T>
T Must(Result<T> r, const std::string& command) {
  if (!r) Fail(command, r.error().ToString(), r.error().code() == StatusCode::kNotFound ? 3 : 1);
  return std::move(r).value();
}

// Who runs this process, for the audit trail: the OS user name of the
// effective uid, or "uid N" when the user database has none.
std::string OsUser() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return "uid " + std::to_string(::geteuid());
}

// Who acts for the audit trail: --actor, else the OS user.
admin::Actor ActorOf(const std::string& actor) { return admin::Actor{actor.empty() ? OsUser() : actor}; }

void AddActor(CLI::App* cmd, std::string* actor) {
  cmd->add_option("--actor", *actor, "who acts, for the audit trail (phasekey.operator_audit; default: the OS user)");
}

// --kek-file and --kek-command, at most one of them; with `required`,
// exactly one; with `needs`, only together with that flag.
void AddKek(CLI::App* cmd, EncryptionOptions* kek, bool required, CLI::Option* needs = nullptr) {
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

// The flow descriptions in `path`, a JSON array as `flows describe` writes
// it. Fails the command (exit 2) when the file cannot be read, is not such
// an array, or is empty; each description is checked by FindStrandedKeys.
std::vector<nlohmann::json> ReadFlowsFile(const std::string& command, const std::string& path) {
  std::ifstream in(path);
  if (!in) Fail(command, "cannot read --flows " + path, 2);
  nlohmann::json parsed = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    Fail(command, "--flows " + path + " is not a JSON array of flow descriptions (as `flows describe` writes)", 2);
  }
  if (parsed.empty()) Fail(command, "--flows " + path + " describes no flows: nothing to check", 2);
  return parsed.get<std::vector<nlohmann::json>>();
}

// The flows to check: those of --flows FILE when given, else the binary's
// own, described (empty when it has none).
std::vector<nlohmann::json> FlowsToCheck(const std::string& command, const std::string& flows_file,
                                         const std::vector<std::shared_ptr<const Flow>>& flows) {
  if (!flows_file.empty()) return ReadFlowsFile(command, flows_file);
  std::vector<nlohmann::json> described;
  for (const auto& f : flows) described.push_back(f->Describe());
  return described;
}

// Fails the command with FindStrandedKeys' error: 2 for a malformed
// description, 1 for the database.
std::vector<StrandedPoint> MustFindStranded(const std::string& command, const std::string& url,
                                            const std::vector<nlohmann::json>& described) {
  auto stranded = FindStrandedKeys(url, described);
  if (!stranded)
    Fail(command, stranded.error().ToString(), stranded.error().code() == StatusCode::kInvalidArgument ? 2 : 1);
  return std::move(stranded).value();
}

void AddErase(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto account = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  auto actor = std::make_shared<std::string>();
  CLI::App* erase = keys->add_subcommand(
      "erase", "erase an account: destroy its data keys and drop every body stored on its keys (audited)");
  AddCommon(erase, c.get(), false);
  erase->add_option("--account", *account, "the account to erase")->required();
  erase->add_flag("--yes", *yes, "do not ask for confirmation");
  AddActor(erase, actor.get());
  erase->callback([c, account, yes, actor] {
    const std::string url = Url(*c, "keys erase");
    if (!*yes) {
      std::cerr << "erase account '" << *account
                << "'? Its data keys are destroyed and every stored body of its keys dropped, for good; its "
                   "unfinished keys are parked for an operator, and a retry of any of its keys is answered 410. "
                   "[y/N] ";
      std::string answer;
      if (!std::getline(std::cin, answer) || (answer != "y" && answer != "yes")) Fail("keys erase", "not confirmed", 4);
    }
    DatabaseOptions database;
    database.url = url;
    const ErasureReport r = Must(EraseAccount(database, *account, ActorOf(*actor).name), "keys erase");
    Print({{"account", *account},
           {"data_keys_destroyed", r.data_keys_destroyed},
           {"keys_erased", r.keys_erased},
           {"keys_stopped", r.keys_stopped}},
          c->json, {});
  });
}

void AddRotateKek(CLI::App* keys) {
  auto c = std::make_shared<Common>();
  auto kek = std::make_shared<EncryptionOptions>();
  auto actor = std::make_shared<std::string>();
  CLI::App* rotate = keys->add_subcommand(
      "rotate-kek", "wrap every data key with the current key-encryption key (the first of the keys given; audited)");
  AddCommon(rotate, c.get(), false);
  AddKek(rotate, kek.get(), true);
  AddActor(rotate, actor.get());
  rotate->callback([c, kek, actor] {
    DatabaseOptions database;
    database.url = Url(*c, "keys rotate-kek");
    // The sealer's named queries run on the rotation's own connection, which
    // prepares nothing.
    pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);
    const RotationReport r = Must(RotateKeyEncryptionKey(database, *kek, ActorOf(*actor).name), "keys rotate-kek");
    Print({{"current_kek", r.current_kek}, {"rewrapped", r.rewrapped}, {"retired_keks", r.retired_keks}}, c->json, {});
  });
}

void AddKeys(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows) {
  CLI::App* keys = app.add_subcommand("keys", "find, inspect, retry and release idempotency keys");
  keys->require_subcommand(1);

  auto lc = std::make_shared<Common>();
  auto filter = std::make_shared<admin::KeyFilter>();
  auto state = std::make_shared<std::string>();
  auto older = std::make_shared<long long>(0);
  CLI::App* list = keys->add_subcommand("list", "keys, oldest first");
  AddCommon(list, lc.get(), false);
  list->add_option("--account", filter->account, "only this account");
  list->add_option("--flow", filter->flow, "only this flow");
  list->add_option("--state", *state,
                   "active (in progress), finished, dead (given up) or needs_operator (parked: a provider may hold "
                   "an effect nobody could verify)")
      ->check(CLI::IsMember({"active", "finished", "dead", "needs_operator"}));
  list->add_flag("--stuck", filter->stuck, "active keys with an expired lease or attempts piling up");
  list->add_option("--older-than", *older, "only keys older than this many seconds")->check(CLI::NonNegativeNumber);
  list->add_option("--limit", filter->limit, "at most this many")->check(CLI::Range(1, 100000));
  list->callback([lc, filter, state, older] {
    if (!state->empty()) filter->state = *state;
    filter->older_than = std::chrono::seconds(*older);
    Print(Must(admin::AdminKeysList(Url(*lc, "keys list"), *filter), "keys list"), lc->json,
          {"account", "key", "flow", "state", "recovery_point", "attempts", "leased", "lease_expired", "age_s",
           "last_error"});
  });

  auto sc = std::make_shared<Common>();
  auto account = std::make_shared<std::string>(), key = std::make_shared<std::string>();
  auto reveal = std::make_shared<bool>(false);
  auto skek = std::make_shared<EncryptionOptions>();
  auto sactor = std::make_shared<std::string>();
  CLI::App* show = keys->add_subcommand(
      "show", "every field of one key, its bodies summarized (--reveal opens them, masked and audited)");
  AddCommon(show, sc.get(), true);
  show->add_option("account", *account)->required();
  show->add_option("key", *key)->required();
  CLI::Option* reveal_flag = show->add_flag(
      "--reveal", *reveal,
      "show the stored request, response and outcomes, with the flow's masked fields as ***; written to the audit "
      "trail");
  AddKek(show, skek.get(), false, reveal_flag);
  AddActor(show, sactor.get());
  show->callback([sc, account, key, flows, reveal, skek, sactor] {
    nlohmann::json row;
    if (*reveal) {
      const std::unique_ptr<seal::Sealer> sealer = MustSealer("keys show", *skek);
      row = Must(admin::AdminKeyReveal(Url(*sc, "keys show"), sc->buckets, *account, *key, *sealer, ActorOf(*sactor)),
                 "keys show");
    } else {
      row = Must(admin::AdminKeyShow(Url(*sc, "keys show"), sc->buckets, *account, *key), "keys show");
    }
    nlohmann::json provider_keys = nlohmann::json::object();
    for (const auto& f : flows) {
      if (f->name() != row["flow"].get<std::string>()) continue;
      // Provider keys are "<stable_id>:<phase>" for the flow's foreign phases.
      for (const std::string& p : admin::ForeignPhases(*f))
        provider_keys[p] = row["stable_id"].get<std::string>() + ":" + p;
    }
    row["provider_keys"] = provider_keys;
    if (sc->json) {
      std::cout << row.dump(2) << "\n";
    } else {
      std::cout << admin::FormatRecord(row);
    }
  });

  auto rc = std::make_shared<Common>();
  auto raccount = std::make_shared<std::string>(), rkey = std::make_shared<std::string>();
  auto verified = std::make_shared<bool>(false);
  auto ractor = std::make_shared<std::string>();
  CLI::App* retry = keys->add_subcommand(
      "retry", "put a dead-lettered key (or, verified, one parked for an operator) back to re-drive");
  AddCommon(retry, rc.get(), true);
  retry->add_option("account", *raccount)->required();
  retry->add_option("key", *rkey)->required();
  retry->add_flag("--verified-not-charged", *verified,
                  "for a key in needs_operator: you checked at the provider that the earlier attempt took no "
                  "effect, so sending it again is a first charge");
  AddActor(retry, ractor.get());
  retry->callback([rc, raccount, rkey, verified, ractor] {
    const std::string url = Url(*rc, "keys retry");
    const std::string point =
        Must(admin::AdminKeyRetry(url, rc->buckets, *raccount, *rkey, *verified, ActorOf(*ractor)), "keys retry");
    std::cout << "key back to re-drive at recovery point " << point
              << " (failures reset, give-up time counted from now; a provider that may have forgotten the key "
                 "is still looked up first, or the key is parked again)\n";
  });

  auto xc = std::make_shared<Common>();
  auto xaccount = std::make_shared<std::string>(), xkey = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  auto xactor = std::make_shared<std::string>();
  CLI::App* release = keys->add_subcommand("release", "free a key's lease by hand (fenced on its owner)");
  AddCommon(release, xc.get(), true);
  release->add_option("account", *xaccount)->required();
  release->add_option("key", *xkey)->required();
  release->add_flag("--yes", *yes, "do not ask for confirmation");
  AddActor(release, xactor.get());
  release->callback([xc, xaccount, xkey, yes, xactor] {
    const std::string url = Url(*xc, "keys release");
    nlohmann::json row = Must(admin::AdminKeyShow(url, xc->buckets, *xaccount, *xkey), "keys release");
    if (row["owner_token"].is_null()) Fail("keys release", "the key holds no lease", 3);
    const std::string token = row["owner_token"].get<std::string>();
    if (!*yes) {
      std::cerr << "release the lease of " << token << " (expires " << row["lease_expires_at"].get<std::string>()
                << ")? A live holder would be fenced out. [y/N] ";
      std::string answer;
      if (!std::getline(std::cin, answer) || (answer != "y" && answer != "yes"))
        Fail("keys release", "not confirmed", 4);
    }
    Must(admin::AdminKeyRelease(url, xc->buckets, *xaccount, *xkey, token, ActorOf(*xactor)), "keys release");
    std::cout << "lease " << token << " released\n";
  });

  AddErase(keys);
  AddRotateKek(keys);
}

void AddStats(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows) {
  auto c = std::make_shared<Common>();
  auto flows_file = std::make_shared<std::string>();
  auto window_s = std::make_shared<int>(600);
  CLI::App* stats = app.add_subcommand(
      "stats", "keys per flow and state, oldest unfinished key, backlog, clients suspected of regenerating keys");
  AddCommon(stats, c.get(), false);
  stats
      ->add_option("--regeneration-window-s", *window_s,
                   "how far apart two keys with the same account, flow and request may be to count as one "
                   "client regenerating its key")
      ->check(CLI::Range(1, 7 * 24 * 3600));
  auto flow_windows = std::make_shared<std::vector<std::string>>();
  stats
      ->add_option("--flow-regeneration-window", *flow_windows,
                   "FLOW=S: flow FLOW's own window, as the reaper's RegenerationAuditOptions::window_by_flow "
                   "gives it (repeatable), so that stats lists what the counter counts")
      ->check([](const std::string& v) -> std::string {
        const auto eq = v.find('=');
        if (eq == 0 || eq == std::string::npos || v.find_first_not_of("0123456789", eq + 1) != std::string::npos ||
            eq + 1 == v.size() || v.size() - eq > 7) {
          return "want FLOW=SECONDS, got '" + v + "'";
        }
        return "";
      });
  stats->add_option("--flows", *flows_file,
                    "also list stranded keys (active at a point these flows do not know) for the flows described "
                    "in FILE (`flows describe` writes it; default: this binary's own flows, if any)");
  stats->callback([c, window_s, flow_windows, flows_file, flows] {
    std::map<std::string, std::chrono::seconds> by_flow;
    for (const std::string& v : *flow_windows) {
      by_flow[v.substr(0, v.find('='))] = std::chrono::seconds(std::stol(v.substr(v.find('=') + 1)));
    }
    const std::string url = Url(*c, "stats");
    const std::vector<nlohmann::json> described = FlowsToCheck("stats", *flows_file, flows);
    nlohmann::json s = Must(admin::AdminStats(url, std::chrono::seconds(*window_s), 20, by_flow), "stats");
    // Only with flows to compare against: without them no point is unknown.
    if (!described.empty()) s["stranded"] = admin::StrandedRows(MustFindStranded("stats", url, described));
    if (c->json) {
      std::cout << s.dump(2) << "\n";
      return;
    }
    std::cout << admin::FormatTable(s["by_flow"], {"flow", "state", "count"});
    const nlohmann::json regenerated = s["suspected_key_regeneration"];
    const nlohmann::json stranded = s.value("stranded", nlohmann::json(nullptr));
    s.erase("by_flow");
    s.erase("suspected_key_regeneration");
    s.erase("stranded");
    std::cout << admin::FormatRecord(s);
    std::cout << "suspected key regeneration (the same request under a new key within "
              << regenerated["window_s"].get<long long>() << " s"
              << (regenerated["window_s_by_flow"].empty() ? "" : ", per flow " + regenerated["window_s_by_flow"].dump())
              << "): " << (regenerated["recent"].empty() ? "none" : "newest first") << "\n";
    if (!regenerated["recent"].empty()) {
      std::cout << admin::FormatTable(regenerated["recent"],
                                      {"flow", "account", "earlier_key", "later_key", "apart_s"});
    }
    if (stranded.is_null()) return;
    std::cout << "stranded (active keys at points these flows do not know):" << (stranded.empty() ? " none" : "")
              << "\n";
    if (!stranded.empty())
      std::cout << admin::FormatTable(stranded, {"flow", "recovery_point", "keys", "longest_wait_s"});
  });
}

void AddReap(CLI::App& app) {
  auto c = std::make_shared<Common>();
  auto dry = std::make_shared<bool>(false);
  auto hours = std::make_shared<int>(72);
  auto dead_days = std::make_shared<int>(30);           // ReaperOptions::dead_retention
  auto needs_operator_days = std::make_shared<int>(0);  // ReaperOptions::needs_operator_retention
  CLI::App* reap = app.add_subcommand("reap", "what the reaper would delete (--dry-run)");
  AddCommon(reap, c.get(), false);
  reap->add_flag("--dry-run", *dry, "only report (required: `phasekey worker --reap` deletes)")->required();
  reap->add_option("--retention-hours", *hours, "the reaper's retention")->check(CLI::Range(1, 24 * 365));
  reap->add_option("--dead-retention-days", *dead_days, "how long dead keys are kept after they died (0: forever)")
      ->check(CLI::Range(0, 3650));
  reap->add_option("--needs-operator-retention-days", *needs_operator_days,
                   "how long keys parked for an operator are kept (0: until an operator resolves them)")
      ->check(CLI::Range(0, 3650));
  // `dry` is captured only to live as long as the command: CLI11 writes the
  // flag into it while parsing (ASan saw a use after free without it).
  reap->callback([c, dry, hours, dead_days, needs_operator_days] {
    Print(Must(admin::AdminReapPreview(Url(*c, "reap"), std::chrono::hours(*hours), std::chrono::hours(24 * *dead_days),
                                       std::chrono::hours(24 * *needs_operator_days)),
               "reap"),
          c->json, {});
  });
}

void AddFlowsDescribe(CLI::App* parent, const std::vector<std::shared_ptr<const Flow>>& flows) {
  auto output = std::make_shared<std::string>();
  CLI::App* describe = parent->add_subcommand(
      "describe", "this binary's flows as data (a JSON array), for `flows check --flows` run elsewhere");
  describe->add_option("--output", *output, "file to write (default: stdout)");
  describe->callback([flows, output] {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& f : flows) all.push_back(f->Describe());
    if (output->empty()) {
      std::cout << all.dump(2) << "\n";
      return;
    }
    std::ofstream out(*output, std::ios::trunc);
    if (!(out << all.dump(2) << "\n") || !out.flush()) Fail("flows describe", "cannot write --output " + *output);
  });
}

// The deploy gate (phasekey/deploy_gate.h): exit 0 when no active key is at
// a point the flows do not know, 1 listing them otherwise (or when the
// database fails), 2 for no flows or a malformed --flows file.
void AddFlowsCheck(CLI::App* parent, const std::vector<std::shared_ptr<const Flow>>& flows) {
  auto c = std::make_shared<Common>();
  auto flows_file = std::make_shared<std::string>();
  CLI::App* check = parent->add_subcommand(
      "check", "the deploy gate: would any unfinished key be at a point these flows do not know? (exit 1 if so)");
  AddCommon(check, c.get(), false);
  check->add_option("--flows", *flows_file,
                    "the flows to check, as `<binary> flows describe` writes them (default: this binary's own)");
  check->callback([c, flows_file, flows] {
    const std::vector<nlohmann::json> described = FlowsToCheck("flows check", *flows_file, flows);
    if (described.empty()) {
      Fail("flows check", "this binary has no flows: pass --flows FILE (written by `<binary> flows describe`)", 2);
    }
    const std::vector<StrandedPoint> stranded = MustFindStranded("flows check", Url(*c, "flows check"), described);
    if (c->json) {
      std::cout << admin::StrandedRows(stranded).dump(2) << "\n";
    } else if (stranded.empty()) {
      std::cout << "no key would be stranded (" << described.size() << " flows checked)\n";
    }
    std::int64_t keys = 0;
    for (const StrandedPoint& p : stranded) {
      keys += p.keys;
      if (!c->json) {
        std::cout << "flow " << p.flow << " point " << p.recovery_point << ": " << p.keys << " keys (longest wait "
                  << p.longest_wait.count() << " s)\n";
      }
    }
    if (keys == 0) return;
    std::cout.flush();
    Fail("flows check", std::to_string(keys) +
                            " active keys at points these flows do not know; declare them "
                            "with Flow::Builder::Renamed or Retired before deploying (docs/upgrading.md)");
  });
}

void AddFlows(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows) {
  CLI::App* cmd = app.add_subcommand("flows", "the flows this binary knows: graphs, descriptions, the deploy gate");
  cmd->require_subcommand(1);
  auto name = std::make_shared<std::string>(), format = std::make_shared<std::string>("dot");
  auto output = std::make_shared<std::string>();
  CLI::App* graph = cmd->add_subcommand("graph", "a flow's phase graph (DOT, or SVG/PNG through Graphviz)");
  graph->add_option("name", *name, "the flow")->required();
  graph->add_option("--format", *format, "dot, svg or png")->check(CLI::IsMember({"dot", "svg", "png"}));
  graph->add_option("--output", *output, "file to write (default: stdout)");
  graph->callback([flows, name, format, output] {
    for (const auto& f : flows) {
      if (f->name() != *name) continue;
      Status s = admin::WriteGraph(f->ToDot(), *format, *output);
      if (!s.ok()) Fail("flows graph", s.message());
      return;
    }
    std::string known;
    for (const auto& f : flows) known += (known.empty() ? "" : ", ") + f->name();
    Fail("flows graph",
         "no flow named '" + *name + "' in this binary (known: " + (known.empty() ? "none" : known) + ")");
  });
  AddFlowsDescribe(cmd, flows);
  AddFlowsCheck(cmd, flows);
}

}  // namespace

namespace admin {

void AddOperatorCommands(CLI::App& app, std::vector<std::shared_ptr<const Flow>> flows) {
  AddKeys(app, flows);
  AddStats(app, flows);
  AddReap(app);
  AddFlows(app, flows);
  AddConsole(app, flows);
}

}  // namespace admin

std::vector<OperatorCommand> OperatorCommands() {
  CLI::App app;
  admin::AddOperatorCommands(app, {});
  std::vector<OperatorCommand> commands;
  for (const CLI::App* cmd : app.get_subcommands([](const CLI::App*) { return true; })) {
    commands.push_back({cmd->get_name(), cmd->get_description()});
  }
  return commands;
}

int RunOperatorCommand(std::string_view program, const std::vector<std::string>& args,
                       std::vector<std::shared_ptr<const Flow>> flows) {
  CLI::App app{"operator commands", std::string(program)};
  app.require_subcommand(1);
  admin::AddOperatorCommands(app, std::move(flows));
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return 0;
}

}  // namespace phasekey
