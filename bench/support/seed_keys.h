// Seeding a key table for the families that measure it large (growth,
// console): copies of one finished key, written by the server in bulk.
#ifndef PHASEKEY_BENCH_SUPPORT_SEED_KEYS_H_
#define PHASEKEY_BENCH_SUPPORT_SEED_KEYS_H_

#include <cstdint>
#include <pqxx/pqxx>

namespace phasekey::bench {

// Copies the key row whose idempotency key is 'template' as the keys
// 'seed-<g>' for g in [from, to], of the accounts "acct-<g % accounts>",
// each in its bucket (AccountBucket of `buckets`), in transactions of
// `conn` of 100000 keys each, then VACUUM ANALYZE the table. Every other column (request,
// response, state) is the template's. Throws on a database error.
void SeedKeyCopies(pqxx::connection& conn, std::int64_t from, std::int64_t to, int accounts, int buckets);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_SEED_KEYS_H_
