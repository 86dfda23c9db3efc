// Helpers behind EmbeddedPostgres: directory preparation, lock-file recovery,
// child processes and the server log. Not part of the public API; tests may
// use them to exercise one step at a time.
//
// None of these functions throws (apart from std::bad_alloc); failures come
// back as a Status.
#ifndef PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_INTERNAL_H_
#define PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_INTERNAL_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/status.h"

namespace phasekey::pg::embedded {

// Who the server runs as. When we are not root, the current user and no
// switch; when we are root, the named system user.
struct ServerUser {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Resolves `system_user` with getpwnam() when running as root.
Result<ServerUser> LookupServerUser(const std::string& system_user);

// Returns `dir` as an absolute, lexically normal path without a trailing
// slash. Fails on an empty path.
Result<std::string> AbsoluteDir(const std::string& dir);

// Creates `base_dir` (and its parents) if missing and makes it 0700. As
// root, also hands it to the server user and makes every ancestor searchable
// by that user alone (an ACL entry user:<server user>:x where needed, never
// o+x); fails naming the ancestor when it cannot. Refuses to chown a
// pre-existing directory that holds anything but our own files.
Status PrepareBaseDir(const std::string& base_dir, const ServerUser& user);

// Makes sure an existing data directory belongs to the server user with mode
// 0700 (top level only). No-op if `data_dir` does not exist.
Status PrepareDataDir(const std::string& data_dir, const ServerUser& user);

// The directory ChooseSocketDir() picks for `base_dir` (an absolute path),
// without creating it.
std::string SocketDirFor(const std::string& base_dir);

// The directory for the unix socket: `base_dir` if "<base_dir>/.s.PGSQL.NNNNN"
// fits into sockaddr_un, otherwise /tmp/phasekey-pg-<hash of base_dir>,
// created 0700 for the server user. Fails if the /tmp directory exists but
// belongs to someone else or is not a directory.
Result<std::string> ChooseSocketDir(const std::string& base_dir, const ServerUser& user);

// A TCP port on 127.0.0.1 that was free a moment ago.
Result<int> PickFreePort();

enum class ProcessState { kGone, kZombie, kRunning };

// Reads /proc/<pid>/stat. kGone if there is no such process.
ProcessState GetProcessState(pid_t pid);

// True if `pid` is running (not a zombie) and its executable name is
// "postgres".
bool IsLivePostgres(pid_t pid);

// Deals with a postmaster.pid left in `data_dir`. The file is removed when
// its pid is dead, a zombie, or a process other than postgres, and no process
// is still attached to the shared memory segment it names. When a live
// postgres (or an attached orphan backend) still holds it, waits up to
// `wait` for it to go away, then fails naming the pid.
Status RecoverStalePidFile(const std::string& data_dir, std::chrono::milliseconds wait);

// Removes "<socket_dir>/.s.PGSQL.<port>.lock" (and the socket) when the pid
// inside is not a live postgres. Postgres itself treats a zombie's lock as
// live, which blocks restarts after a crash.
void ClearStaleSocketLock(const std::string& socket_dir, int port);

// `argv` prefixed with setpriv: --pdeathsig SIGINT always (the server gets a
// fast shutdown when the spawning thread dies), plus the uid/gid switch when
// `user.switch_user`.
std::vector<std::string> WithSetpriv(const ServerUser& user, std::vector<std::string> argv);

// Starts `argv` (argv[0] looked up in PATH) in `cwd`, in its own process
// group, with stdin from `stdin_path`, stdout and stderr appended to
// `log_path`, default signal handling and no other inherited descriptors.
Result<pid_t> SpawnChild(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log_path,
                         const std::string& stdin_path = "/dev/null");

// Waits up to `timeout` for child `pid` to exit and reaps it. Returns true
// and stores the wait status in *wstatus (if not null) when it exited; also
// true (status 0) if it was already reaped elsewhere.
bool WaitForChild(pid_t pid, std::chrono::milliseconds timeout, int* wstatus);

// Stops child `pid`: `signal` (SIGINT: fast shutdown) and up to `timeout`,
// then SIGQUIT, then SIGKILL. Always reaps it. Returns OK if it exited with
// status 0 after the first signal.
Status StopChild(pid_t pid, int signal, std::chrono::milliseconds timeout);

// "exited with status N" / "killed by signal N".
std::string DescribeWaitStatus(int wstatus);

// The size of `path` in bytes, 0 if missing.
off_t FileSize(const std::string& path);

// The last `max_lines` lines of `path` (reading at most its last 64 KiB),
// or a note that it could not be read.
std::string LogTail(const std::string& path, int max_lines);

// The part of `path` from byte `offset` on (at most 64 KiB).
std::string ReadFrom(const std::string& path, off_t offset);

// `value` as a libpq key/value conninfo value, quoted when needed.
std::string QuoteConnInfoValue(std::string_view value);

}  // namespace phasekey::pg::embedded

#endif  // PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_INTERNAL_H_
