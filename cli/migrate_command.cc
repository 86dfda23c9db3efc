// `phasekey migrate`: applies the engine's migrations and prints the version;
// with --component NAME --migrations DIR, then an application's migrations
// from DIR (files named NNNN_description.sql), under the same lock and
// checks, recorded under NAME.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "database_target.h"
#include "phasekey/migrate.h"

namespace phasekey::cli {
namespace {

struct Flags {
  DatabaseFlags db;
  int buckets = 0;
  std::string component;       // an application's component name; empty: the engine's only
  std::string migrations_dir;  // its folder of NNNN_description.sql files
};

// The .sql files of `dir`: their names and texts (owned by the returned
// vectors; `files` views them). Fails with a one-line message.
struct LoadedFiles {
  std::vector<std::string> names, texts;
  std::vector<SqlFile> files;
};

Result<LoadedFiles> LoadMigrations(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::InvalidArgument("--migrations " + dir + ": not a directory");
  LoadedFiles out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".sql") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) return Status::InvalidArgument("--migrations: cannot read " + entry.path().string());
    out.names.push_back(entry.path().filename().string());
    out.texts.push_back(text.str());
  }
  if (ec) return Status::InvalidArgument("--migrations " + dir + ": " + ec.message());
  if (out.names.empty()) return Status::InvalidArgument("--migrations " + dir + ": no .sql files");
  for (std::size_t i = 0; i < out.names.size(); ++i) out.files.push_back(SqlFile{out.names[i], out.texts[i]});
  return out;
}

void PrintReport(const std::string& component, const MigrateReport& report) {
  std::string applied;
  for (int v : report.applied) applied += (applied.empty() ? "" : ", ") + std::to_string(v);
  std::printf("%s schema version %d (was %d; applied: %s)\n", component.c_str(), report.version_after,
              report.version_before, applied.empty() ? "none" : applied.c_str());
}

// The application's migrations, read and checked before anything is
// applied; exits with a one-line message on a bad flag or folder.
MigrationSet ComponentMigrations(const Flags& flags, LoadedFiles* storage) {
  if (flags.component == EngineMigrations().component) {
    Fail("migrate", "--component " + flags.component + " is the engine's own; name the application's", 2);
  }
  auto loaded = LoadMigrations(flags.migrations_dir);
  if (!loaded) Fail("migrate", loaded.error().message(), 2);
  *storage = std::move(*loaded);
  auto set = MigrationSetFromFiles(flags.component, storage->files);
  if (!set) Fail("migrate", set.error().message(), 2);
  return std::move(*set);
}

void RunMigrate(const Flags& flags) {
  if (flags.component.empty() != flags.migrations_dir.empty()) {
    Fail("migrate", "--component and --migrations go together", 2);
  }
  LoadedFiles storage;
  const std::optional<MigrationSet> app =
      flags.component.empty() ? std::nullopt : std::optional<MigrationSet>(ComponentMigrations(flags, &storage));
  auto target = ResolveDatabase(flags.db);
  if (!target) Fail("migrate", target.error().ToString());
  auto report = Migrate(target->url, EngineMigrations());
  if (!report) Fail("migrate", report.error().ToString());
  PrintReport(EngineMigrations().component, *report);
  if (flags.buckets != 0) {
    auto stored = DeploymentBuckets(target->url, flags.buckets);
    if (!stored) Fail("migrate", stored.error().message());
    std::printf("phasekey buckets %d\n", *stored);
  }
  if (!app) return;
  auto app_report = Migrate(target->url, *app);
  if (!app_report) Fail("migrate", app_report.error().ToString());
  PrintReport(app->component, *app_report);
}

}  // namespace

void RegisterMigrateCommand(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd =
      app.add_subcommand("migrate", "apply the engine's schema migrations, then an application's (idempotent)");
  flags->db.AddTo(cmd);
  cmd->add_option("--buckets", flags->buckets,
                  "record the deployment's bucket count (RunnerOptions::buckets; fixed once stored, 16 when the "
                  "first service records it)")
      ->check(CLI::Range(1, 32767));
  cmd->add_option("--component", flags->component,
                  "after the engine's: apply an application's migrations, recorded under this component name");
  cmd->add_option("--migrations", flags->migrations_dir,
                  "the application's migrations folder (NNNN_description.sql files; with --component)");
  cmd->callback([flags] { RunMigrate(*flags); });
}

}  // namespace phasekey::cli
