#include "support/wal_by_relation.h"

#include <pqxx/pqxx>

namespace phasekey::bench {

std::string WalInsertPosition(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec0("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  return tx.exec1("SELECT pg_current_wal_insert_lsn()::text")[0].as<std::string>();
}

std::map<std::string, double> WalBytesByRelation(const std::string& url, const std::string& from,
                                                 const std::string& to) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  // A record's first block reference names the relation file it changed
  // ("blkref #0: rel 1663/16384/16390 ..."); pg_filenode_relation maps the
  // file back to the relation in this database.
  const pqxx::result r = tx.exec_params(
      "WITH rec AS ("
      "  SELECT record_length - fpi_length AS bytes, fpi_length, lower(resource_manager) AS rmgr,"
      "         substring(block_ref from 'rel [0-9]+/[0-9]+/([0-9]+)')::oid AS filenode"
      "  FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),"
      " named AS ("
      "  SELECT bytes, fpi_length,"
      "         coalesce(pg_filenode_relation(0, filenode)::regclass::text, rmgr) AS what FROM rec)"
      " SELECT what, sum(bytes)::float8 FROM named GROUP BY what"
      " UNION ALL SELECT 'full-page images', coalesce(sum(fpi_length), 0)::float8 FROM named",
      from, to);
  std::map<std::string, double> out;
  for (const auto& row : r) out[row[0].as<std::string>()] += row[1].as<double>();
  return out;
}

}  // namespace phasekey::bench
