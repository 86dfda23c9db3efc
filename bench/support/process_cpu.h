// CPU time of processes on this machine, from /proc: what a benchmark
// reads to say where a request's time goes (its own process, the
// PostgreSQL server's, the machine's). Linux only. Values are microseconds
// of user+system time; a process that is gone reads 0.
#ifndef PHASEKEY_BENCH_SUPPORT_PROCESS_CPU_H_
#define PHASEKEY_BENCH_SUPPORT_PROCESS_CPU_H_

#include <sys/types.h>

#include <string>

namespace phasekey::bench {

// utime + stime of `pid`; with `children`, plus the CPU of its children
// that have exited and been waited for (cutime + cstime).
double ProcessCpuUs(pid_t pid, bool children = false);

// Busy time of the whole machine (all CPUs, all but idle and iowait), from
// /proc/stat.
double MachineBusyUs();

// The postmaster of the server whose backend reports `backend_pid` (its
// pg_backend_pid()), when that server runs on this machine (the backend and
// its parent are processes named postgres); 0 otherwise (a remote server:
// nothing of it can be read here).
pid_t PostmasterOf(int backend_pid);

// PostmasterOf a new connection's backend to the server at `url`.
pid_t LocalPostmaster(const std::string& url);

// All the CPU the server of `postmaster` has used so far: the postmaster's
// own, that of its live processes (backends, checkpointer, WAL writer,
// autovacuum) and that of the ones that have exited. Grows monotonically,
// so the difference of two readings is the server's CPU between them.
double ServerCpuUs(pid_t postmaster);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_PROCESS_CPU_H_
