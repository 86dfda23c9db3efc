#include "support/seed_keys.h"

#include <algorithm>
#include <string>

#include "phasekey/runner.h"

namespace phasekey::bench {

void SeedKeyCopies(pqxx::connection& conn, std::int64_t from, std::int64_t to, int accounts, int buckets) {
  std::string columns, values;
  {
    pqxx::nontransaction tx(conn);
    for (const auto& row : tx.exec("SELECT column_name FROM information_schema.columns WHERE table_schema = 'phasekey' "
                                   "AND table_name = 'idempotency_keys' AND column_name NOT IN "
                                   "('id', 'stable_id', 'account', 'idempotency_key', 'bucket') "
                                   "AND is_generated = 'NEVER' ORDER BY ordinal_position")) {
      columns += (columns.empty() ? "" : ", ") + row[0].as<std::string>();
    }
  }
  for (int a = 0; a < accounts; ++a) {
    const std::string account = "acct-" + std::to_string(a);
    values += (a == 0 ? "" : ", ") + std::string("(") + std::to_string(a) + ", '" + account + "', " +
              std::to_string(AccountBucket(account, buckets)) + ")";
  }
  constexpr std::int64_t kChunk = 100000;  // keys per transaction
  for (std::int64_t lo = from; lo <= to; lo += kChunk) {
    const std::int64_t hi = std::min(to, lo + kChunk - 1);
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO phasekey.idempotency_keys (" + columns + ", account, idempotency_key, bucket) SELECT " +
             columns + ", m.account, 'seed-' || g, m.bucket FROM phasekey.idempotency_keys t, generate_series(" +
             std::to_string(lo) + ", " + std::to_string(hi) + ") g JOIN (VALUES " + values +
             ") m(i, account, bucket) ON m.i = g % " + std::to_string(accounts) +
             " WHERE t.idempotency_key = 'template'");
    tx.commit();
  }
  pqxx::nontransaction vacuum(conn);
  vacuum.exec0("VACUUM ANALYZE phasekey.idempotency_keys");
}

}  // namespace phasekey::bench
