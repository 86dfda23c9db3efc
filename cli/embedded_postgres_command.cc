// `phasekey embedded-postgres [--pg-dir DIR] [-- COMMAND ARGS...]`: starts
// the private PostgreSQL server (or finds the one another process already
// runs in DIR) and prints its URL: with the password file named in it
// (passfile=), or with the password itself under --show-password. With a
// command, runs it with DATABASE_URL (password included) and the libpq
// variables PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSFILE set (so psql
// and pg_dump need no arguments), stops the server (if this process started
// it) and exits with the command's status, like pg_virtualenv.
// Without one, serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "database_target.h"
#include "phasekey/tools/stop_signals.h"

extern char** environ;

namespace phasekey::cli {
namespace {

struct Flags {
  std::string pg_dir;
  bool show_password = false;
  std::vector<std::string> command;
};

// Points DATABASE_URL and the libpq variables at `server`, for children.
void ExportConnection(const EmbeddedPostgres& server, const EmbeddedPostgresOptions& options) {
  ::setenv("DATABASE_URL", server.url().c_str(), 1);
  ::setenv("PGHOST", "127.0.0.1", 1);
  ::setenv("PGPORT", std::to_string(server.port()).c_str(), 1);
  ::setenv("PGUSER", options.role.c_str(), 1);
  ::setenv("PGDATABASE", "postgres", 1);
  if (!server.password_file().empty()) ::setenv("PGPASSFILE", server.password_file().c_str(), 1);
}

// Runs `command` (looked up in PATH) with our environment; its exit status,
// or 128 + the signal that ended it.
int RunChild(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (int rc = ::posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ); rc != 0) {
    Fail("embedded-postgres", "cannot run " + command[0] + ": " + std::strerror(rc), 127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void RunEmbedded(const Flags& flags) {
  EmbeddedPostgresOptions options;
  options.base_dir = flags.pg_dir.empty() ? DefaultPgDir() : flags.pg_dir;
  options.attach_to_running = true;
  auto server = EmbeddedPostgres::Start(options);
  if (!server) Fail("embedded-postgres", server.error().ToString());
  const std::string& url = flags.show_password ? (*server)->url() : (*server)->display_url();
  std::printf("DATABASE_URL=%s\n", url.c_str());
  if (!(*server)->owns_server()) {
    std::fprintf(stderr, "embedded-postgres: using the server of pid %d, started by another process\n",
                 static_cast<int>((*server)->pid()));
  }
  std::fflush(stdout);
  if (flags.command.empty()) {
    WaitForStopSignal(BlockStopSignals());
    return;
  }
  ExportConnection(**server, options);
  const int code = RunChild(flags.command);
  server->reset();  // fast shutdown before we exit
  if (code != 0) throw CLI::RuntimeError(code);
}

}  // namespace

void RegisterEmbeddedPostgresCommand(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("embedded-postgres",
                                     "run a private PostgreSQL 15 server (and optionally a command against it)");
  cmd->add_option("--pg-dir", flags->pg_dir,
                  "directory of the server (default: $PHASEKEY_PG_DIR or ./.phasekey/postgres)");
  cmd->add_flag("--show-password", flags->show_password,
                "print the URL with the password in it (default: the password file is named instead)");
  cmd->add_option("command", flags->command,
                  "command to run with DATABASE_URL, PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSFILE set (after --)");
  cmd->callback([flags] { RunEmbedded(*flags); });
}

}  // namespace phasekey::cli
