// The key table's size for the capacity family (bench/capacity_bench.cc):
// real key rows kept aside as templates, copies of them written in bulk,
// and what phasekey.idempotency_keys, its TOAST table and each of its
// indexes take on disk.
#ifndef PHASEKEY_BENCH_SUPPORT_KEY_SIZES_H_
#define PHASEKEY_BENCH_SUPPORT_KEY_SIZES_H_

#include <cstdint>
#include <map>
#include <pqxx/pqxx>
#include <string>

namespace phasekey::bench {

// Bytes on disk of phasekey.idempotency_keys: the table's main fork, its
// TOAST table with the TOAST index, and each index by its name without the
// "idempotency_keys_" prefix ("pkey", "redrive", "reap", "attention"). The
// free space and visibility maps are left out: VACUUM makes them, a few
// pages per gigabyte.
struct KeyTableSizes {
  double heap_bytes = 0;
  double toast_bytes = 0;
  std::map<std::string, double> index_bytes;

  double IndexTotal() const;
  double Total() const { return heap_bytes + toast_bytes + IndexTotal(); }
};

// Reads the sizes now. Throws pqxx exceptions.
KeyTableSizes ReadKeyTableSizes(pqxx::connection& conn);

// Keeps the key row (bucket, account, key) as it is now in the table
// capacity_templates (created on first use: `label` and every column of
// phasekey.idempotency_keys), under `label`. Throws std::runtime_error when
// the row does not exist, pqxx exceptions on a database error.
void KeepTemplate(pqxx::connection& conn, const std::string& label, int bucket, const std::string& account,
                  const std::string& key);

// Inserts copies g = from..to of the template `label` into
// phasekey.idempotency_keys, in transactions of 100000: the account
// "acct-<g % accounts>" in its bucket (AccountBucket of `buckets`), a key
// of 36 characters (a UUID's text, as most clients send), a new stable_id,
// and every timestamp the template has moved g milliseconds later, so the
// indexes on times are filled in order as live traffic fills them. Every
// other column is the template's. Throws pqxx exceptions.
void InsertTemplateCopies(pqxx::connection& conn, const std::string& label, std::int64_t from, std::int64_t to,
                          int accounts, int buckets);

// The mean pg_column_size of the rows of phasekey.idempotency_keys: the
// tuple with its header, without the page's line pointer. Throws pqxx
// exceptions.
double MeanTupleBytes(pqxx::connection& conn);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_KEY_SIZES_H_
