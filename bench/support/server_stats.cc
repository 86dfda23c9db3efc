#include "support/server_stats.h"

#include "support/process_cpu.h"

#include <chrono>
#include <pqxx/pqxx>
#include <thread>

namespace phasekey::bench {

ServerCounts ReadServerCounts(const std::string& url) {
  pqxx::connection conn(url);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    pqxx::nontransaction tx(conn);
    const auto others = tx.exec1(
                              "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                              "AND pid <> pg_backend_pid()")[0]
                            .as<long long>();
    if (others == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pqxx::nontransaction tx(conn);
  tx.exec("SELECT pg_stat_clear_snapshot()");
  pqxx::row r = tx.exec1(
      "SELECT xact_commit, xact_rollback, (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint, pg_backend_pid() "
      "FROM pg_stat_database WHERE datname = current_database()");
  ServerCounts out{r[0].as<std::int64_t>(), r[1].as<std::int64_t>(), r[2].as<std::int64_t>()};
  if (const pid_t postmaster = PostmasterOf(r[3].as<int>()); postmaster != 0)
    out.server_cpu_us = ServerCpuUs(postmaster);
  return out;
}

}  // namespace phasekey::bench
