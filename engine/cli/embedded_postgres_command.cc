// `phasekey embedded-postgres [--pg-dir DIR] [-- COMMAND ARGS...]`: starts
// the private PostgreSQL server and prints its URL. With a command, runs it
// with DATABASE_URL set, stops the server and exits with the command's
// status (like pg_virtualenv). Without one, serves until SIGINT or SIGTERM.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <pthread.h>
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

extern char** environ;

namespace phasekey::cli {
namespace {

struct Flags {
  std::string pg_dir;
  std::vector<std::string> command;
};

int RunChild(const std::vector<std::string>& command, const std::string& url) {
  ::setenv("DATABASE_URL", url.c_str(), 1);
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

void WaitForStopSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int sig = 0;
  sigwait(&set, &sig);
}

void RunEmbedded(const Flags& flags) {
  EmbeddedPostgresOptions options;
  options.base_dir = flags.pg_dir.empty() ? DefaultPgDir() : flags.pg_dir;
  auto server = EmbeddedPostgres::Start(options);
  if (!server) Fail("embedded-postgres", server.error().ToString());
  std::printf("DATABASE_URL=%s\n", (*server)->url().c_str());
  std::fflush(stdout);
  if (flags.command.empty()) {
    WaitForStopSignal();
    return;
  }
  const int code = RunChild(flags.command, (*server)->url());
  server->reset();  // fast shutdown before we exit
  if (code != 0) throw CLI::RuntimeError(code);
}

}  // namespace

void RegisterEmbeddedPostgresCommand(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "embedded-postgres", "run a private PostgreSQL 15 server (and optionally a command against it)");
  cmd->add_option("--pg-dir", flags->pg_dir,
                  "directory of the server (default: $PHASEKEY_PG_DIR or ./.phasekey/postgres)");
  cmd->add_option("command", flags->command, "command to run with DATABASE_URL set (after --)");
  cmd->callback([flags] { RunEmbedded(*flags); });
}

}  // namespace phasekey::cli
