#include "database_target.h"

#include <cstdio>
#include <cstdlib>

namespace phasekey::cli {

void DatabaseFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--database-url", url, "PostgreSQL URL (default: $DATABASE_URL, else an embedded server)");
  cmd->add_option("--pg-dir", pg_dir,
                  "directory of the embedded server (default: $PHASEKEY_PG_DIR or ./.phasekey/postgres)");
}

std::string DefaultPgDir() {
  const char* env = std::getenv("PHASEKEY_PG_DIR");
  if (env != nullptr && *env != '\0') return env;
  return ".phasekey/postgres";
}

Result<DatabaseTarget> ResolveDatabase(const DatabaseFlags& flags) {
  DatabaseTarget target;
  target.url = flags.url;
  if (target.url.empty()) {
    const char* env = std::getenv("DATABASE_URL");
    if (env != nullptr) target.url = env;
  }
  if (!target.url.empty()) return target;
  EmbeddedPostgresOptions options;
  options.base_dir = flags.pg_dir.empty() ? DefaultPgDir() : flags.pg_dir;
  options.attach_to_running = true;
  auto server = EmbeddedPostgres::Start(options);
  if (!server) return server.error();
  target.embedded = std::move(*server);
  target.url = target.embedded->url();
  std::fprintf(stderr, "phasekey: embedded PostgreSQL at %s (data in %s%s)\n", target.embedded->display_url().c_str(),
               target.embedded->data_dir().c_str(), target.embedded->owns_server() ? "" : "; another process's server");
  return target;
}

}  // namespace phasekey::cli
