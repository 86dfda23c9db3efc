// The catalog of SQL compiled into the engine: migrations and named queries
// from sql/. Engine code never spells SQL, nor a query's name as a string: it
// runs a named query through its typed handle, q::<Name>
// (sql/query_ref.h), generated at build time from sql/queries into
// "sql/queries.h", with the one checked call pg::Exec/Exec0/Exec1 (or
// pg::ExecuteText for a simple-protocol statement). The compiler refuses an
// unknown name and a wrong number of arguments; tests check that every query
// prepares on a real server with the parameter count the handle says.
//
// Named query files hold statements separated by "-- name: <Name>" header
// lines (noun-first names that are C++ identifiers, e.g. "KeyClaim"),
// optionally followed by a "-- protocol: simple" line. Parameters are
// $1..$N. Migration files are named "NNNN_description.sql". Parsing happens
// once, on first use; a malformed query file fails the build (the handle
// generator refuses it) and, should one reach the binary, aborts at start-up
// with a message.
#ifndef PHASEKEY_SRC_SQL_SQL_CATALOG_H_
#define PHASEKEY_SRC_SQL_SQL_CATALOG_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/migrate.h"
#include "sql/queries.h"  // generated: the handles q::<Name>
#include "sql/query_ref.h"

namespace phasekey::sql {

struct NamedQuery {
  std::string name;
  std::string text;
  // Marked "-- protocol: simple" on the line after its header: prepared
  // with SQL PREPARE and run with EXECUTE, so that it can travel in one
  // simple-protocol query with BEGIN or COMMIT (see pg/transaction.h).
  bool simple = false;
};

// Splits one query file into its named statements. Returns false and sets
// *error on a file with text before the first header or a duplicate name.
bool ParseNamedQueries(const SqlFile& file, std::vector<NamedQuery>* out, std::string* error);

// Parses "NNNN_description.sql" into a Migration. False on a bad name.
bool ParseMigration(const SqlFile& file, Migration* out, std::string* error);

// All named queries of the engine (every file under sql/queries).
const std::vector<NamedQuery>& EngineQueries();

// The named engine query at `index` of EngineQueries(). Aborts when it is not
// named `name`: a handle from another build of sql/queries (cannot happen
// when the generated header and the embedded files come from one build).
const NamedQuery& QueryAt(std::size_t index, std::string_view name);

// The text of the query `query` names, found without a search.
template <std::size_t N>
const std::string& Query(QueryRef<N> query) {
  return QueryAt(query.index, query.name).text;
}

}  // namespace phasekey::sql

#endif  // PHASEKEY_SRC_SQL_SQL_CATALOG_H_
