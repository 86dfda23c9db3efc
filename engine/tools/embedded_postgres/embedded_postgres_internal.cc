#include "embedded_postgres/embedded_postgres_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace phasekey::pg::embedded {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How much of server.log we read back for error messages.
constexpr off_t kMaxLogRead = 64 * 1024;

// Longest path that fits into sockaddr_un::sun_path with its NUL.
constexpr size_t kMaxSocketPath = sizeof(sockaddr_un::sun_path) - 1;

std::string ErrnoText(int err) { return std::strerror(err); }

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

pid_t ParsePid(const std::string& text) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || v <= 0 || v > INT32_MAX) return 0;
  return static_cast<pid_t>(v);
}

// True if `user` may search (x) a directory with status `st`. Supplementary
// groups are ignored, so this errs on the side of "no".
bool CanSearch(const struct stat& st, const ServerUser& user) {
  if (st.st_uid == user.uid) return (st.st_mode & S_IXUSR) != 0;
  if (st.st_gid == user.gid) return (st.st_mode & S_IXGRP) != 0;
  return (st.st_mode & S_IXOTH) != 0;
}

// Gives `user` (and nobody else) search permission on directory `path`
// (status `st`) through a POSIX ACL: an entry user:<uid>:--x, with the mask
// widened by x only, so the owning group keeps exactly its permissions. The
// kernel's xattr format (linux/posix_acl_xattr.h): a version, then entries
// sorted by tag. True as well when an ACL with that entry is already there
// (an earlier start's); fails for a directory with another ACL (we do not
// merge) and where ACLs are not supported.
bool GrantSearchByAcl(const std::string& path, const struct stat& st, const ServerUser& user) {
  constexpr uint32_t kVersion = 2;
  constexpr uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kMask = 0x10, kOther = 0x20;
  constexpr uint32_t kNoId = 0xffffffff;
  char existing[512];
  const ssize_t n = getxattr(path.c_str(), "system.posix_acl_access", existing, sizeof(existing));
  if (n >= 4) {  // Already an ACL: enough if it has our entry (an earlier start's), with x in the mask.
    bool user_x = false, mask_x = true;
    for (ssize_t at = 4; at + 8 <= n; at += 8) {
      uint16_t tag, perm;
      uint32_t id;
      std::memcpy(&tag, existing + at, 2);
      std::memcpy(&perm, existing + at + 2, 2);
      std::memcpy(&id, existing + at + 4, 4);
      if (tag == kUser && id == static_cast<uint32_t>(user.uid)) user_x = (perm & 1) != 0;
      if (tag == kMask) mask_x = (perm & 1) != 0;
    }
    errno = EEXIST;
    return user_x && mask_x;
  }
  if (n >= 0 || errno != ENODATA) return false;
  const uint16_t owner = (st.st_mode >> 6) & 7, group = (st.st_mode >> 3) & 7, other = st.st_mode & 7;
  const struct {
    uint16_t tag, perm;
    uint32_t id;
  } entries[] = {{kUserObj, owner, kNoId},
                 {kUser, 1, static_cast<uint32_t>(user.uid)},
                 {kGroupObj, group, kNoId},
                 {kMask, static_cast<uint16_t>(group | 1), kNoId},
                 {kOther, other, kNoId}};
  std::string acl(reinterpret_cast<const char*>(&kVersion), 4);  // little-endian, as x86 and arm64 are
  for (const auto& e : entries) {
    acl.append(reinterpret_cast<const char*>(&e.tag), 2);
    acl.append(reinterpret_cast<const char*>(&e.perm), 2);
    acl.append(reinterpret_cast<const char*>(&e.id), 4);
  }
  return setxattr(path.c_str(), "system.posix_acl_access", acl.data(), acl.size(), 0) == 0;
}

// Makes every ancestor of `dir` searchable by `user` alone: an ancestor it
// cannot search gets an ACL entry for it (GrantSearchByAcl). Never o+x: on a
// home directory that would let every local user in. Fails naming the
// ancestor when no ACL can be set.
Status MakeAncestorsSearchable(const std::string& dir, const ServerUser& user) {
  for (fs::path p = fs::path(dir).parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      return Status::FailedPrecondition("cannot stat " + p.string() + ": " + ErrnoText(errno));
    }
    if (!CanSearch(st, user) && !GrantSearchByAcl(p.string(), st, user)) {
      return Status::FailedPrecondition(
          "the server user (uid " + std::to_string(user.uid) + ") cannot reach " + dir + ": " + p.string() +
          " is not searchable for it and no ACL entry could be added (" + ErrnoText(errno) +
          "); choose a base_dir (--pg-dir) it can reach, or grant it search on " + p.string() +
          " yourself (e.g. setfacl -m u:" + std::to_string(user.uid) + ":x)");
    }
    if (p == p.root_path()) break;
  }
  return Status::OK();
}

// True if `dir` holds nothing but what EmbeddedPostgres puts there.
bool HoldsOnlyOurFiles(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name != "data" && name != "server.log" && name != "start.lock" && name.rfind("pgpass", 0) != 0 &&
        name.rfind("set-password", 0) != 0 && name.rfind(".s.PGSQL.", 0) != 0) {
      return false;
    }
  }
  return !ec;
}

Status ChownIfNeeded(const std::string& path, const ServerUser& user) {
  struct stat st;
  if (!user.switch_user || (stat(path.c_str(), &st) == 0 && st.st_uid == user.uid)) {
    return Status::OK();
  }
  if (chown(path.c_str(), user.uid, user.gid) != 0) {
    return Status::FailedPrecondition("cannot chown " + path + ": " + ErrnoText(errno));
  }
  return Status::OK();
}

Status CreateLog(const std::string& log_path, const ServerUser& user) {
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::FailedPrecondition("cannot open " + log_path + ": " + ErrnoText(errno));
  }
  close(fd);
  return ChownIfNeeded(log_path, user);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

struct PidFile {
  pid_t pid = 0;
  key_t shm_key = -1;
  int shm_id = -1;
};

// Parses postmaster.pid: line 1 is the pid, line 7 "<shm key> <shm id>".
bool ReadPidFile(const std::string& path, PidFile* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 1) out->pid = ParsePid(line);
    if (n == 7) {
      long key = -1;
      int id = -1;
      if (std::sscanf(line.c_str(), "%ld %d", &key, &id) == 2) {
        out->shm_key = static_cast<key_t>(key);
        out->shm_id = id;
      }
    }
  }
  return true;
}

bool HasCwd(pid_t pid, const std::string& dir) {
  std::error_code ec;
  fs::path cwd = fs::read_symlink("/proc/" + std::to_string(pid) + "/cwd", ec);
  if (ec) return true;  // Cannot tell (permissions): assume it is ours.
  return fs::equivalent(cwd, dir, ec) || ec;
}

// Processes attached to the SysV segment named in postmaster.pid (orphan
// backends of a killed postmaster). Removes the segment if nobody is.
shmatt_t AttachedToSegment(const PidFile& file) {
  struct shmid_ds ds;
  if (file.shm_id < 0 || shmctl(file.shm_id, IPC_STAT, &ds) != 0) return 0;
  if (ds.shm_perm.__key != file.shm_key) return 0;  // Reused id: not ours.
  if (ds.shm_nattch == 0) shmctl(file.shm_id, IPC_RMID, nullptr);
  return ds.shm_nattch;
}

// Who still holds the data directory locked by `file`; empty if nobody.
std::string LockHolder(const PidFile& file, const std::string& data_dir) {
  if (file.pid > 0 && IsLivePostgres(file.pid) && HasCwd(file.pid, data_dir)) {
    return "a running postgres (pid " + std::to_string(file.pid) + ")";
  }
  shmatt_t attached = AttachedToSegment(file);
  if (attached > 0) {
    return std::to_string(attached) + " process(es) attached to the shared memory of postgres pid " +
           std::to_string(file.pid);
  }
  return "";
}

}  // namespace

Result<ServerUser> LookupServerUser(const std::string& system_user) {
  ServerUser user;
  if (geteuid() != 0) {
    user.uid = geteuid();
    user.gid = getegid();
    return user;
  }
  std::vector<char> buf(16384);
  struct passwd pw;
  struct passwd* found = nullptr;
  int err = getpwnam_r(system_user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (found == nullptr) {
    return Status::FailedPrecondition("postgres cannot run as root and system user '" + system_user +
                                      "' was not found" + (err != 0 ? " (" + ErrnoText(err) + ")" : "") +
                                      "; create it (useradd -r -M " + system_user +
                                      ") or set EmbeddedPostgresOptions::system_user");
  }
  if (pw.pw_uid == 0) {
    return Status::InvalidArgument("system user '" + system_user + "' is root");
  }
  user.switch_user = true;
  user.uid = pw.pw_uid;
  user.gid = pw.pw_gid;
  return user;
}

Result<std::string> AbsoluteDir(const std::string& dir) {
  if (dir.empty()) return Status::InvalidArgument("embedded postgres: base_dir is empty");
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  if (ec) return Status::InvalidArgument("cannot resolve " + dir + ": " + ec.message());
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

Status PrepareBaseDir(const std::string& base_dir, const ServerUser& user) {
  std::error_code ec;
  bool existed = fs::exists(base_dir, ec);
  fs::create_directories(base_dir, ec);
  if (ec) return Status::FailedPrecondition("cannot create " + base_dir + ": " + ec.message());
  if (!fs::is_directory(base_dir, ec)) {
    return Status::InvalidArgument(base_dir + " is not a directory");
  }
  if (user.switch_user) {
    struct stat st;
    if (existed && stat(base_dir.c_str(), &st) == 0 && st.st_uid != user.uid && !HoldsOnlyOurFiles(base_dir)) {
      return Status::InvalidArgument(base_dir + " holds other files; use a dedicated directory as base_dir");
    }
    Status s = ChownIfNeeded(base_dir, user);
    if (!s.ok()) return s;
    s = MakeAncestorsSearchable(base_dir, user);
    if (!s.ok()) return s;
  }
  // Only the server's user: the socket may sit here, and the password file.
  struct stat st;
  if (stat(base_dir.c_str(), &st) != 0 || ((st.st_mode & 07777) != 0700 && chmod(base_dir.c_str(), 0700) != 0)) {
    return Status::FailedPrecondition("cannot chmod 0700 " + base_dir + ": " + ErrnoText(errno));
  }
  return CreateLog(base_dir + "/server.log", user);
}

Status PrepareDataDir(const std::string& data_dir, const ServerUser& user) {
  struct stat st;
  if (stat(data_dir.c_str(), &st) != 0) return Status::OK();
  Status s = ChownIfNeeded(data_dir, user);
  if (!s.ok()) return s;
  mode_t mode = st.st_mode & 07777;
  if (mode != 0700 && mode != 0750 && chmod(data_dir.c_str(), 0700) != 0) {
    return Status::FailedPrecondition("cannot chmod 0700 " + data_dir + ": " + ErrnoText(errno));
  }
  return Status::OK();
}

std::string SocketDirFor(const std::string& base_dir) {
  if (base_dir.size() + std::strlen("/.s.PGSQL.65535") <= kMaxSocketPath) return base_dir;
  char name[64];
  std::snprintf(name, sizeof(name), "/tmp/phasekey-pg-%016" PRIx64, Fnv1a(base_dir));
  return name;
}

Result<std::string> ChooseSocketDir(const std::string& base_dir, const ServerUser& user) {
  std::string dir = SocketDirFor(base_dir);
  if (dir == base_dir) return dir;
  bool created = mkdir(dir.c_str(), 0700) == 0;
  if (!created && errno != EEXIST) {
    return Status::FailedPrecondition("cannot create socket directory " + dir + ": " + ErrnoText(errno));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::FailedPrecondition("socket directory " + dir + " is not a directory");
  }
  if (created) {
    Status s = ChownIfNeeded(dir, user);
    if (!s.ok()) return s;
  } else if (st.st_uid != user.uid) {
    return Status::FailedPrecondition("socket directory " + dir + " belongs to uid " + std::to_string(st.st_uid) +
                                      "; remove it");
  }
  return dir;
}

Result<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FailedPrecondition("socket: " + ErrnoText(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (rc == 0) rc = getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int err = errno;
  close(fd);
  if (rc != 0) return Status::FailedPrecondition("cannot find a free port: " + ErrnoText(err));
  return static_cast<int>(ntohs(addr.sin_port));
}

ProcessState GetProcessState(pid_t pid) {
  std::string stat = ReadFirstLine("/proc/" + std::to_string(pid) + "/stat");
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) {
    return ProcessState::kGone;
  }
  char state = stat[close_paren + 2];
  return (state == 'Z' || state == 'X') ? ProcessState::kZombie : ProcessState::kRunning;
}

bool IsLivePostgres(pid_t pid) {
  return pid > 0 && GetProcessState(pid) == ProcessState::kRunning &&
         ReadFirstLine("/proc/" + std::to_string(pid) + "/comm") == "postgres";
}

Status RecoverStalePidFile(const std::string& data_dir, std::chrono::milliseconds wait) {
  const std::string path = data_dir + "/postmaster.pid";
  const auto deadline = Clock::now() + wait;
  for (;;) {
    PidFile file;
    if (!ReadPidFile(path, &file)) return Status::OK();
    std::string holder = LockHolder(file, data_dir);
    if (holder.empty()) {
      if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        return Status::FailedPrecondition("cannot remove stale " + path + ": " + ErrnoText(errno));
      }
      return Status::OK();
    }
    if (Clock::now() >= deadline) {
      return Status::FailedPrecondition("data directory " + data_dir + " is still in use by " + holder +
                                        "; stop it or wait for it to exit");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void ClearStaleSocketLock(const std::string& socket_dir, int port) {
  const std::string socket = socket_dir + "/.s.PGSQL." + std::to_string(port);
  const std::string lock = socket + ".lock";
  if (access(lock.c_str(), F_OK) != 0) return;
  if (IsLivePostgres(ParsePid(ReadFirstLine(lock)))) return;
  unlink(lock.c_str());
  unlink(socket.c_str());
}

std::vector<std::string> WithSetpriv(const ServerUser& user, std::vector<std::string> argv) {
  std::vector<std::string> out = {"setpriv"};
  if (user.switch_user) {
    out.push_back("--reuid=" + std::to_string(user.uid));
    out.push_back("--regid=" + std::to_string(user.gid));
    out.push_back("--init-groups");
  }
  out.insert(out.end(), {"--pdeathsig", "SIGINT", "--"});
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log_path,
                         const std::string& stdin_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  pid_t pid = -1;
  int err = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    return Status::FailedPrecondition("cannot run `" + command + "` in " + cwd + ": " + ErrnoText(err));
  }
  return pid;
}

bool WaitForChild(pid_t pid, std::chrono::milliseconds timeout, int* wstatus) {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      if (wstatus != nullptr) *wstatus = r == pid ? st : 0;
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

Status StopChild(pid_t pid, int signal, std::chrono::milliseconds timeout) {
  int st = 0;
  kill(pid, signal);
  if (WaitForChild(pid, timeout, &st)) {
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return Status::OK();
    return Status::Terminal("postgres (pid " + std::to_string(pid) + ") " + DescribeWaitStatus(st) + " while stopping");
  }
  kill(pid, SIGQUIT);
  if (!WaitForChild(pid, std::chrono::seconds(5), &st)) {
    kill(pid, SIGKILL);
    WaitForChild(pid, std::chrono::seconds(30), &st);
  }
  return Status::Terminal("postgres (pid " + std::to_string(pid) + ") did not stop within " +
                          std::to_string(timeout.count()) + " ms; sent SIGQUIT/SIGKILL");
}

std::string DescribeWaitStatus(int wstatus) {
  if (WIFEXITED(wstatus)) return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
  if (WIFSIGNALED(wstatus)) {
    const char* name = sigabbrev_np(WTERMSIG(wstatus));
    return "was killed by signal " + std::to_string(WTERMSIG(wstatus)) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : "");
  }
  return "ended with wait status " + std::to_string(wstatus);
}

off_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

std::string ReadFrom(const std::string& path, off_t offset) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out(static_cast<size_t>(kMaxLogRead), '\0');
  ssize_t n = pread(fd, out.data(), out.size(), offset);
  close(fd);
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::string LogTail(const std::string& path, int max_lines) {
  if (access(path.c_str(), R_OK) != 0) {
    return "(cannot read " + path + ": " + ErrnoText(errno) + ")";
  }
  off_t start = std::max<off_t>(0, FileSize(path) - kMaxLogRead);
  std::vector<std::string> lines;
  std::istringstream in(ReadFrom(path, start));
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  size_t first = start > 0 ? 1 : 0;  // We may have cut the first line.
  first = std::max(first, lines.size() - std::min(lines.size(), static_cast<size_t>(max_lines)));
  std::string out;
  for (size_t i = first; i < lines.size(); ++i) out += (i == first ? "" : "\n") + lines[i];
  return out;
}

std::string QuoteConnInfoValue(std::string_view value) {
  bool plain = !value.empty() && value.find_first_of(" \t\n'\\") == std::string_view::npos;
  if (plain) return std::string(value);
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

}  // namespace phasekey::pg::embedded
