// `phasekey migrate`: applies the engine's migrations and prints the version.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "database_target.h"
#include "phasekey/migrate.h"

namespace phasekey::cli {
namespace {

void RunMigrate(const DatabaseFlags& flags, int buckets) {
  auto target = ResolveDatabase(flags);
  if (!target) Fail("migrate", target.error().ToString());
  auto report = Migrate(target->url, EngineMigrations());
  if (!report) Fail("migrate", report.error().ToString());
  std::string applied;
  for (int v : report->applied) applied += (applied.empty() ? "" : ", ") + std::to_string(v);
  std::printf("phasekey schema version %d (was %d; applied: %s)\n", report->version_after, report->version_before,
              applied.empty() ? "none" : applied.c_str());
  if (buckets == 0) return;
  auto stored = DeploymentBuckets(target->url, buckets);
  if (!stored) Fail("migrate", stored.error().message());
  std::printf("phasekey buckets %d\n", *stored);
}

}  // namespace

void RegisterMigrateCommand(CLI::App& app) {
  auto flags = std::make_shared<DatabaseFlags>();
  CLI::App* cmd = app.add_subcommand("migrate", "apply the engine's schema migrations (idempotent)");
  auto buckets = std::make_shared<int>(0);
  flags->AddTo(cmd);
  cmd->add_option("--buckets", *buckets,
                  "record the deployment's bucket count (RunnerOptions::buckets; fixed once stored, 16 when the "
                  "first service records it)")
      ->check(CLI::Range(1, 32767));
  cmd->callback([flags, buckets] { RunMigrate(*flags, *buckets); });
}

}  // namespace phasekey::cli
