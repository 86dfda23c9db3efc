#include "support/key_sizes.h"

#include <algorithm>
#include <stdexcept>

#include "phasekey/runner.h"

namespace phasekey::bench {
namespace {

constexpr const char* kIndexPrefix = "idempotency_keys_";

// The copied columns of the key table as (name, expression over the
// template t and the copy's number g): every column but the identity, the
// stable id and the key's address, timestamps moved g milliseconds later.
std::pair<std::string, std::string> CopiedColumns(pqxx::connection& conn) {
  std::string names, exprs;
  pqxx::nontransaction tx(conn);
  for (const auto& row : tx.exec("SELECT column_name, data_type FROM information_schema.columns "
                                 "WHERE table_schema = 'phasekey' AND table_name = 'idempotency_keys' "
                                 "AND column_name NOT IN ('id', 'stable_id', 'account', 'idempotency_key', 'bucket') "
                                 "AND is_generated = 'NEVER' ORDER BY ordinal_position")) {
    const std::string name = row[0].as<std::string>();
    const bool time = row[1].as<std::string>() == "timestamp with time zone";
    names += (names.empty() ? "" : ", ") + name;
    exprs += (exprs.empty() ? "" : ", ") + (time ? "t." + name + " + g * interval '1 millisecond'" : "t." + name);
  }
  return {names, exprs};
}

}  // namespace

double KeyTableSizes::IndexTotal() const {
  double sum = 0;
  for (const auto& [name, bytes] : index_bytes) sum += bytes;
  return sum;
}

KeyTableSizes ReadKeyTableSizes(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  KeyTableSizes s;
  const pqxx::row table = tx.exec1(
      "SELECT pg_relation_size(c.oid)::float8, "
      "coalesce(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0)::float8 "
      "FROM pg_class c WHERE c.oid = 'phasekey.idempotency_keys'::regclass");
  s.heap_bytes = table[0].as<double>();
  s.toast_bytes = table[1].as<double>();
  for (const auto& row : tx.exec("SELECT c.relname, pg_relation_size(c.oid)::float8 FROM pg_index i "
                                 "JOIN pg_class c ON c.oid = i.indexrelid "
                                 "WHERE i.indrelid = 'phasekey.idempotency_keys'::regclass")) {
    std::string name = row[0].as<std::string>();
    if (name.rfind(kIndexPrefix, 0) == 0) name = name.substr(std::string(kIndexPrefix).size());
    s.index_bytes[name] = row[1].as<double>();
  }
  return s;
}

void KeepTemplate(pqxx::connection& conn, const std::string& label, int bucket, const std::string& account,
                  const std::string& key) {
  pqxx::work tx(conn);
  tx.exec0(
      "CREATE TABLE IF NOT EXISTS public.capacity_templates AS "
      "SELECT ''::text AS label, k.* FROM phasekey.idempotency_keys k WITH NO DATA");
  tx.exec_params0("DELETE FROM public.capacity_templates WHERE label = $1", label);
  const pqxx::result r = tx.exec_params(
      "INSERT INTO public.capacity_templates SELECT $1, k.* FROM phasekey.idempotency_keys k "
      "WHERE k.bucket = $2 AND k.account = $3 AND k.idempotency_key = $4",
      label, bucket, account, key);
  if (r.affected_rows() != 1) throw std::runtime_error("no key row " + account + "/" + key + " to keep as " + label);
  tx.commit();
}

void InsertTemplateCopies(pqxx::connection& conn, const std::string& label, std::int64_t from, std::int64_t to,
                          int accounts, int buckets) {
  const auto [names, exprs] = CopiedColumns(conn);
  std::string values;
  for (int a = 0; a < accounts; ++a) {
    const std::string account = "acct-" + std::to_string(a);
    values += (a == 0 ? "" : ", ") + std::string("(") + std::to_string(a) + ", '" + account + "', " +
              std::to_string(AccountBucket(account, buckets)) + ")";
  }
  constexpr std::int64_t kChunk = 100000;  // keys per transaction
  for (std::int64_t lo = from; lo <= to; lo += kChunk) {
    const std::int64_t hi = std::min(to, lo + kChunk - 1);
    pqxx::work tx(conn);
    tx.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (" + names + ", account, idempotency_key, bucket) SELECT " + exprs +
            ", m.account, md5(g::text)::uuid::text, m.bucket FROM public.capacity_templates t, "
            "generate_series($2::bigint, $3::bigint) g JOIN (VALUES " +
            values + ") m(i, account, bucket) ON m.i = g % " + std::to_string(accounts) + " WHERE t.label = $1",
        label, lo, hi);
    tx.commit();
  }
}

double MeanTupleBytes(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  return tx.exec1("SELECT coalesce(avg(pg_column_size(k.*)), 0)::float8 FROM phasekey.idempotency_keys k")[0]
      .as<double>();
}

}  // namespace phasekey::bench
