// Server-side counters of one database, for figures the client cannot see:
// transactions committed and rolled back (pg_stat_database), WAL written
// (pg_current_wal_lsn, server-wide) and, when the server runs on this
// machine, the CPU all its processes have used (support/process_cpu.h).
#ifndef PHASEKEY_BENCH_SUPPORT_SERVER_STATS_H_
#define PHASEKEY_BENCH_SUPPORT_SERVER_STATS_H_

#include <cstdint>
#include <string>

namespace phasekey::bench {

struct ServerCounts {
  std::int64_t commits = 0;    // xact_commit (read-only transactions included)
  std::int64_t rollbacks = 0;  // xact_rollback
  std::int64_t wal_bytes = 0;  // pg_current_wal_lsn() - '0/0'
  double server_cpu_us = -1;   // ServerCpuUs; -1: the server is not on this machine
};

// Waits (up to 5 s) until no other session is connected to the database at
// `url`, so that every closed session has flushed its statistics (PostgreSQL
// 15 flushes them at session exit at the latest), then reads the counters.
// Callers close their own connections first. Throws pqxx exceptions.
ServerCounts ReadServerCounts(const std::string& url);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_SERVER_STATS_H_
