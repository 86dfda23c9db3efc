// `console`: the operator console in the browser (console/console_server.h),
// an operator command like `keys` and `stats`, so every binary that offers
// those offers it with its own flows.
#include "console/console_command.h"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "console/console_server.h"
#include "console/web.h"
#include "phasekey/tools/host_port.h"
#include "phasekey/tools/stop_signals.h"

namespace phasekey::admin {
namespace {

struct ConsoleFlags {
  std::string database_url;
  std::string listen = "127.0.0.1:8090";
  std::string token_file;
  bool read_only = false;
  bool secure_cookies = false;
  int buckets = 0;
  int login_attempts = 10;
  int login_window_s = 300;
  EncryptionOptions encryption;  // opens sealed bodies for a reveal
};

[[noreturn]] void Fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "phasekey console: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

std::string ReadToken(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) Fail("cannot read --token-file " + path);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    Fail("--token-file " + path + " is open to group or others (mode " + mode + "): chmod 600 " + path, 2);
  }
  std::ifstream f(path);
  if (!f) Fail("cannot read --token-file " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())) != 0) token.pop_back();
  if (token.size() < 16) Fail("the token in " + path + " is shorter than 16 characters");
  return token;
}

void RunConsole(const ConsoleFlags& flags, std::vector<std::shared_ptr<const Flow>> flows) {
  console::ConsoleOptions o;
  // "127.0.0.1:8090" or "[::1]:8090"; port 0 picks a free one.
  const std::optional<HostPort> listen = ParseHostPort(flags.listen, PortZero::kAllowed);
  if (!listen) Fail("--listen wants ADDRESS:PORT, got " + flags.listen, 2);
  o.address = listen->host;
  o.port = listen->port;
  if (!console::IsLoopbackAddress(o.address) && flags.token_file.empty()) {
    Fail("refusing to listen on " + flags.listen +
             " without --token-file: a generated token is only printed "
             "here, and a console reachable from other machines needs a token you chose and keep",
         2);
  }
  o.database_url = flags.database_url;
  if (o.database_url.empty()) {
    const char* env = std::getenv("DATABASE_URL");
    if (env != nullptr) o.database_url = env;
  }
  if (o.database_url.empty()) Fail("no database: pass --database-url or set DATABASE_URL");
  o.token = flags.token_file.empty() ? console::RandomSecret() : ReadToken(flags.token_file);
  o.read_only = flags.read_only;
  o.secure_cookies = flags.secure_cookies;
  o.buckets = flags.buckets;
  o.login_attempts = flags.login_attempts;
  o.login_window = std::chrono::seconds(flags.login_window_s);
  o.encryption = flags.encryption;
  o.flows = std::move(flows);
  // Blocked before the server's threads start, so they inherit the mask and
  // only the wait below takes SIGINT/SIGTERM.
  const sigset_t stop = BlockStopSignals();
  console::ConsoleServer server(o);
  Status s = server.Start();
  if (!s.ok()) Fail(s.ToString());
  // On stdout, the token first: a script reads it, then waits for the
  // "listening on" line.
  const std::string host = FormatHostPort(o.address, server.port());
  if (flags.token_file.empty()) std::printf("token: %s\n", o.token.c_str());
  std::printf("open http://%s/ and log in with the token%s\n", host.c_str(), o.read_only ? " (read-only)" : "");
  std::printf("listening on %s\n", host.c_str());
  std::fflush(stdout);
  WaitForStopSignal(stop);
  server.Stop();
}

}  // namespace

void AddConsole(CLI::App& app, const std::vector<std::shared_ptr<const Flow>>& flows) {
  auto flags = std::make_shared<ConsoleFlags>();
  CLI::App* cmd = app.add_subcommand("console", "the operator console in the browser (until SIGINT/SIGTERM)");
  cmd->add_option("--database-url", flags->database_url, "PostgreSQL URL (default: $DATABASE_URL)");
  cmd->add_option("--listen", flags->listen, "ADDRESS:PORT to serve on (default 127.0.0.1:8090; port 0 picks one)");
  cmd->add_option("--token-file", flags->token_file,
                  "file holding the login token (default: a new token, printed at start; required off loopback)");
  cmd->add_flag("--read-only", flags->read_only, "show keys, offer and accept no action");
  cmd->add_flag("--secure-cookies", flags->secure_cookies,
                "behind a TLS proxy: the session cookie is __Host-phasekey_console with Secure (HTTPS only)");
  cmd->add_option("--buckets", flags->buckets,
                  "a check: the bucket count the services use (default: the one stored in the database)")
      ->check(CLI::Range(1, 32767));
  cmd->add_option("--login-attempts", flags->login_attempts,
                  "wrong tokens one client address may send within --login-window-s before its logins get 429 "
                  "(default 10)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--login-window-s", flags->login_window_s,
                  "the window of --login-attempts, in seconds, from the address's first wrong token (default 300)")
      ->check(CLI::Range(1, 7 * 24 * 3600));
  CLI::Option_group* keks = cmd->add_option_group("key-encryption keys");
  keks->add_option("--kek-file", flags->encryption.kek_file,
                   "the key-encryption keys that open sealed bodies for a reveal (as the services' --kek-file; "
                   "without it or --kek-command, a reveal of a sealed key is refused)");
  keks->add_option("--kek-command", flags->encryption.kek_command,
                   "instead of --kek-file: a command (sh -c) that prints the key-encryption keys");
  keks->require_option(0, 1);
  cmd->callback([flags, flows] { RunConsole(*flags, flows); });
}

}  // namespace phasekey::admin
