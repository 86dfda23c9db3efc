// `phasekey providers`: prints what phasekey_phases knows about each payment
// gateway (phasekey/phases/adapters.h): where the idempotency key goes, its
// limits, how long the gateway keeps it, how it answers conflicts, and how a
// charge is reconciled. Text by default, a JSON array with --json.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::cli {
namespace {

using phases::AdapterInfo;
using phases::KeyPlacement;

constexpr char kCommand[] = "providers";

// "24h", "30d", "unlimited", "none".
std::string RetentionText(const AdapterInfo& info) {
  const auto seconds = info.key_retention;
  std::string text;
  if (info.placement == KeyPlacement::kNone || seconds.count() == 0) return "none";
  if (seconds == std::chrono::seconds::max()) return "unlimited";
  if (seconds.count() % 86400 == 0 && seconds.count() >= 2 * 86400) {
    text = std::to_string(seconds.count() / 86400) + "d";
  } else if (seconds.count() % 3600 == 0) {
    text = std::to_string(seconds.count() / 3600) + "h";
  } else {
    text = std::to_string(seconds.count()) + "s";
  }
  return info.retention_documented ? text : text + " (assumed)";
}

std::string KeyText(const AdapterInfo& info) {
  if (info.placement == KeyPlacement::kNone) return "none (reference " + info.reference_field + ")";
  return std::string(phases::KeyPlacementName(info.placement)) + " " + info.key_field;
}

std::string LimitsText(const AdapterInfo& info) {
  if (info.placement == KeyPlacement::kNone) return "-";
  return phases::DescribeKeyRules(info.key_rules);
}

nlohmann::json ToJson(const AdapterInfo& info) {
  nlohmann::json key = nullptr;
  if (info.placement != KeyPlacement::kNone) {
    key = {{"field", info.key_field},
           {"min_length", info.key_rules.min_length},
           {"max_length", info.key_rules.max_length},
           {"alphabet", phases::KeyAlphabetName(info.key_rules.alphabet)},
           {"rules", phases::DescribeKeyRules(info.key_rules)}};
  }
  nlohmann::json retention_seconds = info.key_retention.count();
  if (info.key_retention == std::chrono::seconds::max()) retention_seconds = nullptr;
  return {
      {"name", info.name},
      {"display_name", info.display_name},
      {"key_placement", phases::KeyPlacementName(info.placement)},
      {"key", key},
      {"retention", RetentionText(info)},
      {"retention_seconds", retention_seconds},
      {"retention_documented", info.retention_documented},
      {"retention_note", info.retention_note},
      {"key_replays_all_answers", info.key_replays_all_answers},
      {"conflict", info.conflict},
      {"reference", {{"field", info.reference_field}, {"rules", phases::DescribeKeyRules(info.reference_rules)}}},
      {"reconciliation",
       {{"lookup", info.has_lookup}, {"how", info.reconciliation}, {"list", info.has_list}, {"listing", info.listing}}},
      {"sources", info.sources}};
}

// Rows of cells printed as left-aligned columns two spaces apart.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

void Write(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
    Fail(kCommand, "cannot write stdout");
  }
}

void RunProviders(bool json) {
  const auto adapters = phases::NewDefaultAdapters();
  if (json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& a : adapters) all.push_back(ToJson(a->info()));
    Write(all.dump(2) + "\n");
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"PROVIDER", "KEY", "LIMITS", "RETENTION", "CONFLICT", "RECONCILIATION"}};
  for (const auto& a : adapters) {
    const AdapterInfo& info = a->info();
    rows.push_back(
        {info.name, KeyText(info), LimitsText(info), RetentionText(info), info.conflict, info.reconciliation});
  }
  Write(Table(rows));
}

}  // namespace

void RegisterProvidersCommand(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(kCommand, "list the payment gateway adapters and their idempotency facts");
  cmd->add_flag("--json", *json, "print a JSON array, one object per provider");
  cmd->footer(
      "Columns: where the idempotency key goes, its limits, how long the gateway keeps it ((assumed): not "
      "documented, a configurable safe default), how it answers conflicts, and how a charge is reconciled. "
      "Sources and the safer readings chosen: docs/providers.md.");
  cmd->callback([json] { RunProviders(*json); });
}

}  // namespace phasekey::cli
