// Implements phasekey/tools/operator_commands.h and admin/operator_commands_cli.h:
// CLI wiring and output.
#include "phasekey/tools/operator_commands.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "admin/key_admin.h"
#include "admin/table.h"
#include "commands/command_support.h"
#include "commands/key_commands.h"
#include "commands/operator_commands_cli.h"
#include "console/console_command.h"
#include "console/console_queries.h"
#include "flow/stranded_rows.h"
#include "phasekey/deploy_gate.h"

namespace phasekey {
namespace {

using commands::AddCommon;
using commands::Common;
using commands::Fail;
using commands::Must;
using commands::Print;
using commands::Url;

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
  commands::AddKeys(app, flows);
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
