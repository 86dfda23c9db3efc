#include "support/dedicated_postgres.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/ride_world.h"

namespace phasekey::testing {

DedicatedPostgres::DedicatedPostgres(DedicatedPostgresOptions options) : options_(std::move(options)) {
  base_dir_ =
      std::string(PHASEKEY_TEST_BINARY_DIR) + "/dedicated-pg/" + options_.name + "-" + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::remove_all(base_dir_, ec);
  std::filesystem::remove_all(files_dir(), ec);
  std::filesystem::create_directories(files_dir());
  std::filesystem::permissions(files_dir(), std::filesystem::perms(0755));
  for (const auto& [file, contents] : options_.files) {
    const std::string path = files_dir() + "/" + file;
    std::ofstream(path) << contents;
    std::filesystem::permissions(path, std::filesystem::perms(0644));
  }
  port_ = FreeLoopbackPort();
}

DedicatedPostgres::~DedicatedPostgres() {
  if (server_) {
    Thaw();
    server_.reset();
  }
  std::error_code ec;
  std::filesystem::remove_all(base_dir_, ec);
  std::filesystem::remove_all(files_dir(), ec);
}

Status DedicatedPostgres::Start() {
  server_.reset();
  EmbeddedPostgresOptions o;
  o.base_dir = base_dir_;
  o.port = port_;
  o.settings = {{"fsync", "off"}, {"max_connections", "100"}};
  std::vector<std::string> names;
  for (const std::string& e : options_.server_env) {
    const auto eq = e.find('=');
    names.push_back(e.substr(0, eq));
    std::string value = e.substr(eq + 1);
    for (std::size_t at; (at = value.find("@FILES_DIR@")) != std::string::npos;) value.replace(at, 11, files_dir());
    ::setenv(names.back().c_str(), value.c_str(), 1);
  }
  auto started = EmbeddedPostgres::Start(o);
  // Before the first start the port is only a guess at a free one: another
  // process may have taken it meanwhile, so try a few. Later starts must
  // keep it (the services were given the URL).
  for (int attempt = 0; !started && url_.empty() && attempt < 3; ++attempt) {
    o.port = port_ = FreeLoopbackPort();
    started = EmbeddedPostgres::Start(o);
  }
  for (const std::string& n : names) ::unsetenv(n.c_str());
  if (!started) return started.error();
  server_ = std::move(*started);
  url_ = server_->url();
  return Status::OK();
}

void DedicatedPostgres::Kill() {
  if (!server_) return;
  ::kill(server_->pid(), SIGKILL);
  (void)server_->Stop();  // reaps the killed postmaster
  server_.reset();
}

namespace {

// The pids whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');  // the command may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

void DedicatedPostgres::Freeze() {
  if (!server_) return;
  // Backends are process group leaders of their own (postgres calls setsid
  // in every child), so each is signalled by pid. The postmaster first: a
  // stopped postmaster forks no new backends meanwhile.
  ::kill(server_->pid(), SIGSTOP);
  for (pid_t child : ChildrenOf(server_->pid())) ::kill(child, SIGSTOP);
}

void DedicatedPostgres::Thaw() {
  if (!server_) return;
  for (pid_t child : ChildrenOf(server_->pid())) ::kill(child, SIGCONT);
  ::kill(server_->pid(), SIGCONT);
}

}  // namespace phasekey::testing
