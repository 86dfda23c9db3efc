#include "phasekey/tools/embedded_postgres.h"

#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/url/encode.hpp>
#include <boost/url/grammar/lut_chars.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "embedded_postgres/embedded_postgres_auth.h"
#include "embedded_postgres/embedded_postgres_internal.h"
#include "embedded_postgres/embedded_postgres_sharing.h"
#include "pg/statements.h"
#include "sql/sql_catalog.h"

namespace phasekey {
namespace {

namespace em = pg::embedded;
using Clock = std::chrono::steady_clock;

// With port 0 we pick a free port, but another process may bind it before
// postgres does. A clash shows up as an early exit; we retry with a new port.
constexpr int kPortAttempts = 5;

// A postmaster whose parent died gets SIGINT and needs a moment for its fast
// shutdown (a checkpoint); wait this long before calling the directory busy.
constexpr std::chrono::seconds kStalePidWait{10};

// initdb takes about a second; a generous bound still catches a hang.
constexpr std::chrono::seconds kInitdbTimeout{120};

// Fast shutdown aborts sessions and writes a checkpoint; after this long we
// escalate to SIGQUIT (immediate shutdown) and then SIGKILL.
constexpr std::chrono::seconds kStopTimeout{30};

// Lines of server.log quoted in error messages.
constexpr int kLogTailLines = 20;

// Setting the password of an existing cluster (postgres --single) takes
// well under a second.
constexpr std::chrono::seconds kSetPasswordTimeout{60};

// The file handed to initdb (--pwfile) or to postgres --single (stdin) with
// the role's SCRAM secret; removed right after.
constexpr char kSecretFileName[] = "set-password";

// Where everything lives; all paths absolute.
struct Layout {
  std::string base_dir;
  std::string data_dir;
  std::string log_path;
  std::string socket_dir;
  std::string password_file;
  em::ServerUser user;
};

// A running server, before it is wrapped into an EmbeddedPostgres.
struct Launched {
  pid_t pid = -1;
  int port = 0;
  bool owned = true;     // false: another process's server we attached to
  std::string password;  // empty for a server started before passwords (trust)
};

std::string WithLogTail(std::string message, const std::string& log_path) {
  return std::move(message) + "; last lines of " + log_path + ":\n" + em::LogTail(log_path, kLogTailLines);
}

Status ValidateOptions(const EmbeddedPostgresOptions& options) {
  if (options.base_dir.empty()) {
    return Status::InvalidArgument("embedded postgres: base_dir is empty");
  }
  if (options.role.empty()) return Status::InvalidArgument("embedded postgres: role is empty");
  if (options.port < 0 || options.port > 65535) {
    return Status::InvalidArgument("embedded postgres: port " + std::to_string(options.port) + " is out of range");
  }
  if (options.start_timeout.count() <= 0) {
    return Status::InvalidArgument("embedded postgres: start_timeout must be positive");
  }
  for (const auto& [name, value] : options.settings) {
    if (name.empty() || name.find('=') != std::string::npos) {
      return Status::InvalidArgument("embedded postgres: bad setting name '" + name + "'");
    }
  }
  std::string postgres = options.bin_dir + "/postgres";
  if (access(postgres.c_str(), X_OK) != 0) {
    return Status::InvalidArgument("embedded postgres: no executable " + postgres +
                                   "; install postgresql-15 or set bin_dir");
  }
  return Status::OK();
}

// The paths and the server user; touches nothing on disk.
Result<Layout> ResolveLayout(const EmbeddedPostgresOptions& options) {
  Layout layout;
  Result<std::string> base_dir = em::AbsoluteDir(options.base_dir);
  if (!base_dir) return base_dir.error();
  Result<em::ServerUser> user = em::LookupServerUser(options.system_user);
  if (!user) return user.error();
  layout.base_dir = *base_dir;
  layout.data_dir = layout.base_dir + "/data";
  layout.log_path = layout.base_dir + "/server.log";
  layout.password_file = layout.base_dir + "/" + em::kPasswordFileName;
  layout.user = *user;
  return layout;
}

// Creates or repairs base_dir, the log, data_dir and the socket directory.
// Called under the start lock: a second process would otherwise see them
// half made (a socket directory not yet handed to the server user).
Status PrepareLayout(Layout* layout) {
  Status s = em::PrepareBaseDir(layout->base_dir, layout->user);
  if (s.ok()) s = em::PrepareDataDir(layout->data_dir, layout->user);
  if (!s.ok()) return s;
  Result<std::string> socket_dir = em::ChooseSocketDir(layout->base_dir, layout->user);
  if (!socket_dir) return socket_dir.error();
  layout->socket_dir = *socket_dir;
  return Status::OK();
}

// Runs `argv` (as the server user) to its end, its output in server.log,
// with stdin from `stdin_path`.
Status RunToEnd(std::vector<std::string> argv, const std::string& what, std::chrono::seconds timeout,
                const Layout& layout, const std::string& stdin_path) {
  Result<pid_t> pid =
      em::SpawnChild(em::WithSetpriv(layout.user, std::move(argv)), layout.base_dir, layout.log_path, stdin_path);
  if (!pid) return pid.error();
  int wstatus = 0;
  if (!em::WaitForChild(*pid, timeout, &wstatus)) {
    (void)em::StopChild(*pid, SIGINT, std::chrono::seconds(10));
    return Status::DeadlineExceeded(WithLogTail(what + " did not finish in time", layout.log_path));
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return Status::FailedPrecondition(WithLogTail(what + " " + em::DescribeWaitStatus(wstatus), layout.log_path));
  }
  return Status::OK();
}

// A new password: its SCRAM secret in `text_of(secret)` goes to a file
// `run(file)` hands to initdb or postgres; once that succeeded, the password
// goes to the password file. The file with the secret is removed either way.
template <typename TextOf, typename Run>
Result<std::string> SetNewPassword(const Layout& layout, const std::string& role, TextOf text_of, Run run) {
  Result<std::string> password = em::NewPassword();
  if (!password) return password.error();
  Result<std::string> secret = em::ScramSecret(*password);
  if (!secret) return secret.error();
  const std::string secret_file = layout.base_dir + "/" + kSecretFileName;
  Status s = em::WriteSecretFile(secret_file, text_of(*secret), layout.user);
  if (s.ok()) s = run(secret_file);
  unlink(secret_file.c_str());
  if (s.ok()) s = em::WritePasswordFile(layout.password_file, layout.socket_dir, role, *password, layout.user);
  if (!s.ok()) return s;
  return *password;
}

// Runs initdb unless data/PG_VERSION exists: the role gets a new password
// (scram-sha-256). initdb's output goes to server.log.
Status InitdbIfNeeded(const EmbeddedPostgresOptions& options, const Layout& layout) {
  std::error_code ec;
  if (std::filesystem::exists(layout.data_dir + "/PG_VERSION", ec)) return Status::OK();
  auto text_of = [](const std::string& secret) { return secret + "\n"; };
  auto run = [&](const std::string& secret_file) {
    // clang-format off
    std::vector<std::string> argv = {
        options.bin_dir + "/initdb", "-D", layout.data_dir, "-U", options.role, "-A", "scram-sha-256",
        "--pwfile=" + secret_file, "-E", "UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions"};
    // clang-format on
    return RunToEnd(std::move(argv), "initdb", kInitdbTimeout, layout, "/dev/null");
  };
  Result<std::string> password = SetNewPassword(layout, options.role, text_of, run);
  return password ? Status::OK() : password.error();
}

// `name` as an SQL identifier.
std::string QuoteIdent(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The role's password from the password file. A cluster without one (made
// before the embedded server asked for passwords, or whose file was removed)
// gets a new one, set with postgres --single: the server is not running.
Result<std::string> EnsurePassword(const EmbeddedPostgresOptions& options, const Layout& layout) {
  Result<std::string> password = em::ReadPasswordFile(layout.password_file);
  if (password || password.error().code() != StatusCode::kNotFound) return password;
  auto text_of = [&](const std::string& secret) {
    std::string literal = "'";
    for (char c : secret) literal += c == '\'' ? std::string("''") : std::string(1, c);
    literal += "'";
    // One line without the query's comments: postgres --single ends a
    // statement at a newline.
    const std::string text =
        pg::SubstituteParameters(sql::Query(sql::q::EmbeddedPostgresSetPassword), {QuoteIdent(options.role), literal});
    std::string line;
    std::istringstream lines(text);
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind("--", 0) != 0) line += l + " ";
    }
    return line + "\n";
  };
  auto run = [&](const std::string& secret_file) {
    // clang-format off
    std::vector<std::string> argv = {
        options.bin_dir + "/postgres", "--single", "-D", layout.data_dir, "-c", "exit_on_error=on",
        "-c", "log_min_error_statement=panic", "postgres"};
    // clang-format on
    return RunToEnd(std::move(argv), "postgres --single (setting the password)", kSetPasswordTimeout, layout,
                    secret_file);
  };
  return SetNewPassword(layout, options.role, text_of, run);
}

std::vector<std::string> PostgresArgv(const EmbeddedPostgresOptions& options, const Layout& layout, int port) {
  // clang-format off
  std::vector<std::string> argv = {
      options.bin_dir + "/postgres", "-D", layout.data_dir, "-p", std::to_string(port),
      "-k", layout.socket_dir, "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_permissions=0700"};
  // clang-format on
  for (const auto& [name, value] : options.settings) {
    argv.push_back("-c");
    argv.push_back(name + "=" + value);
  }
  return argv;
}

std::string SocketConnInfo(const std::string& socket_dir, int port, const std::string& role) {
  return "host=" + em::QuoteConnInfoValue(socket_dir) + " port=" + std::to_string(port) +
         " user=" + em::QuoteConnInfoValue(role) + " dbname=postgres";
}

// Polls PQping until the server accepts connections. On failure the child
// has been reaped (stopped first if it was still running).
Status WaitUntilReady(pid_t pid, const std::string& conninfo, std::chrono::milliseconds timeout,
                      const std::string& log_path) {
  const std::string ping_conninfo = conninfo + " connect_timeout=5";
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(5);
  for (;;) {
    PGPing ping = PQping(ping_conninfo.c_str());
    if (ping == PQPING_OK) return Status::OK();
    if (ping == PQPING_NO_ATTEMPT) {
      (void)em::StopChild(pid, SIGINT, kStopTimeout);
      return Status::InvalidArgument("embedded postgres: libpq rejects conninfo " + conninfo);
    }
    int wstatus = 0;
    if (em::WaitForChild(pid, std::chrono::milliseconds(0), &wstatus)) {
      return Status::FailedPrecondition(WithLogTail(
          "postgres (pid " + std::to_string(pid) + ") " + em::DescribeWaitStatus(wstatus) + " during startup",
          log_path));
    }
    if (Clock::now() >= deadline) {
      (void)em::StopChild(pid, SIGINT, kStopTimeout);
      return Status::DeadlineExceeded(WithLogTail(
          "postgres did not accept connections within " + std::to_string(timeout.count()) + " ms", log_path));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

// True if the server log (from this attempt on) says the port was taken.
bool LooksLikePortClash(const std::string& log) {
  return log.find("Address already in use") != std::string::npos ||
         log.find("could not create any TCP/IP sockets") != std::string::npos;
}

Result<Launched> LaunchOnce(const EmbeddedPostgresOptions& options, const Layout& layout, int port) {
  em::ClearStaleSocketLock(layout.socket_dir, port);
  Result<pid_t> pid = em::SpawnChild(em::WithSetpriv(layout.user, PostgresArgv(options, layout, port)), layout.data_dir,
                                     layout.log_path);
  if (!pid) return pid.error();
  Status ready = WaitUntilReady(*pid, SocketConnInfo(layout.socket_dir, port, options.role), options.start_timeout,
                                layout.log_path);
  if (!ready.ok()) return ready;
  return Launched{*pid, port, /*owned=*/true, ""};
}

// Starts postgres, retrying with a fresh port on a clash when the port is
// ours to choose.
Result<Launched> Launch(const EmbeddedPostgresOptions& options, const Layout& layout) {
  for (int attempt = 1;; ++attempt) {
    int port = options.port;
    if (port == 0) {
      Result<int> free_port = em::PickFreePort();
      if (!free_port) return free_port.error();
      port = *free_port;
    }
    off_t log_start = em::FileSize(layout.log_path);
    Result<Launched> launched = LaunchOnce(options, layout, port);
    if (launched || options.port != 0 || attempt == kPortAttempts ||
        !LooksLikePortClash(em::ReadFrom(layout.log_path, log_start))) {
      return launched;
    }
  }
}

// How long a second process waits for the one that is initializing and
// starting the same server: initdb, a stale lock's wait and every launch.
std::chrono::milliseconds StartLockTimeout(const EmbeddedPostgresOptions& options) {
  return kInitdbTimeout + kStalePidWait + options.start_timeout * kPortAttempts;
}

// The server another process runs on this layout, if it is ready and
// answers. Waits up to start_timeout for one that is still starting.
std::optional<Launched> FindRunning(const EmbeddedPostgresOptions& options, const Layout& layout) {
  std::optional<em::RunningServer> running = em::WaitForReadyServer(layout.data_dir, options.start_timeout);
  if (!running) return std::nullopt;
  const std::string ping = SocketConnInfo(layout.socket_dir, running->port, options.role) + " connect_timeout=5";
  if (PQping(ping.c_str()) != PQPING_OK) return std::nullopt;
  return Launched{running->pid, running->port, /*owned=*/false, ""};
}

Result<Launched> PrepareAndLaunch(const EmbeddedPostgresOptions& options, Layout* layout) {
  Status s = ValidateOptions(options);
  if (!s.ok()) return s;
  Result<Layout> resolved = ResolveLayout(options);
  if (!resolved) return resolved.error();
  *layout = std::move(*resolved);
  // The lock lives in base_dir, so only creating it happens before the lock.
  std::error_code ec;
  if (!std::filesystem::is_directory(layout->base_dir, ec) &&
      !std::filesystem::create_directories(layout->base_dir, ec) && ec) {
    return Status::FailedPrecondition("cannot create " + layout->base_dir + ": " + ec.message());
  }
  Result<em::StartLock> lock = em::StartLock::Acquire(layout->base_dir, layout->user.switch_user, layout->user.uid,
                                                      layout->user.gid, StartLockTimeout(options));
  if (!lock) return lock.error();
  s = PrepareLayout(layout);
  if (!s.ok()) return s;
  if (options.attach_to_running) {
    if (std::optional<Launched> running = FindRunning(options, *layout)) {
      // A server started before the password file existed trusts us: none.
      Result<std::string> password = em::ReadPasswordFile(layout->password_file);
      if (!password && password.error().code() != StatusCode::kNotFound) return password.error();
      if (password) running->password = *password;
      return *running;
    }
  }
  s = InitdbIfNeeded(options, *layout);
  if (s.ok()) s = em::RecoverStalePidFile(layout->data_dir, kStalePidWait);
  if (!s.ok()) return s;
  Result<std::string> password = EnsurePassword(options, *layout);
  if (!password) return password.error();
  s = em::WriteHbaConf(layout->data_dir, layout->user);
  if (!s.ok()) return s;
  Result<Launched> launched = Launch(options, *layout);
  if (launched) launched->password = *password;
  return launched;
}

// What a file path may hold unencoded in a URL's query.
const boost::urls::grammar::lut_chars& PathChars() {
  static const boost::urls::grammar::lut_chars chars = boost::urls::unreserved_chars + '/';
  return chars;
}

}  // namespace

Result<std::unique_ptr<EmbeddedPostgres>> EmbeddedPostgres::Start(EmbeddedPostgresOptions options) {
  try {
    Layout layout;
    Result<Launched> launched = PrepareAndLaunch(options, &layout);
    if (!launched) return launched.error();
    std::unique_ptr<EmbeddedPostgres> server(new EmbeddedPostgres());
    server->pid_ = launched->pid;
    server->port_ = launched->port;
    server->owns_server_ = launched->owned;
    server->data_dir_ = layout.data_dir;
    const std::string user = boost::urls::encode(options.role, boost::urls::unreserved_chars);
    const std::string where = "@127.0.0.1:" + std::to_string(launched->port) + "/postgres";
    const std::string& password = launched->password;
    server->url_ = "postgresql://" + user + (password.empty() ? "" : ":" + password) + where;
    server->display_url_ = "postgresql://" + user + where;
    if (!password.empty()) {
      server->display_url_ += "?passfile=" + boost::urls::encode(layout.password_file, PathChars());
      server->password_file_ = layout.password_file;
    }
    server->socket_conninfo_ = SocketConnInfo(layout.socket_dir, launched->port, options.role) +
                               (password.empty() ? "" : " password=" + password);
    return server;
  } catch (const std::exception& e) {
    // Only std::bad_alloc and the like can get here; do not let it escape.
    return Status::Terminal(std::string("embedded postgres: ") + e.what());
  }
}

EmbeddedPostgres::~EmbeddedPostgres() { (void)Stop(); }

Status EmbeddedPostgres::Stop() {
  if (pid_ <= 0) return Status::OK();
  pid_t pid = pid_;
  pid_ = -1;
  if (!owns_server_) return Status::OK();
  return em::StopChild(pid, SIGINT, kStopTimeout);
}

}  // namespace phasekey
