// Where a run's WAL went: the records between two WAL positions, read back
// with PostgreSQL 15's pg_walinspect and summed by the relation of each
// record's first block (the table or index it changed), full-page images
// apart. What cannot be tied to a relation of the current database
// (commit records, other databases) is summed by resource manager.
#ifndef PHASEKEY_BENCH_SUPPORT_WAL_BY_RELATION_H_
#define PHASEKEY_BENCH_SUPPORT_WAL_BY_RELATION_H_

#include <map>
#include <string>

namespace phasekey::bench {

// The current WAL insert position of the server at `url` ("0/16B3F28").
// Creates the pg_walinspect extension in that database if it is missing
// (needs a superuser, as the bench's embedded server has). Throws pqxx
// exceptions.
std::string WalInsertPosition(const std::string& url);

// Bytes of WAL between `from` and `to` by what they changed: a relation's
// name ("phasekey.idempotency_keys"), "full-page images", or a lowercase
// resource manager name ("transaction" for commit records). Throws pqxx
// exceptions.
std::map<std::string, double> WalBytesByRelation(const std::string& url, const std::string& from,
                                                 const std::string& to);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_WAL_BY_RELATION_H_
