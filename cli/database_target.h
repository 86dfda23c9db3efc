// Where a CLI command's database is: --database-url, else $DATABASE_URL,
// else an embedded PostgreSQL in --pg-dir (default $PHASEKEY_PG_DIR or
// ./.phasekey/postgres), started for the command's lifetime, or the one
// another process already runs there.
#ifndef PHASEKEY_CLI_DATABASE_TARGET_H_
#define PHASEKEY_CLI_DATABASE_TARGET_H_

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "phasekey/status.h"
#include "phasekey/tools/embedded_postgres.h"

namespace phasekey::cli {

struct DatabaseFlags {
  std::string url;     // --database-url
  std::string pg_dir;  // --pg-dir
  void AddTo(CLI::App* cmd);
};

struct DatabaseTarget {
  std::string url;
  std::unique_ptr<EmbeddedPostgres> embedded;  // set when we started one
};

std::string DefaultPgDir();

// Resolves the flags; starts the embedded server when no URL is given, and
// says so on stderr.
Result<DatabaseTarget> ResolveDatabase(const DatabaseFlags& flags);

}  // namespace phasekey::cli

#endif  // PHASEKEY_CLI_DATABASE_TARGET_H_
