// The catalog of SQL compiled into the engine: migrations and named queries
// from sql/. Engine code never spells SQL; it asks the catalog by name.
//
// Named query files hold statements separated by "-- name: <Name>" header
// lines (noun-first names, e.g. "KeyClaim"), optionally followed by a
// "-- protocol: simple" line. Migration files are named
// "NNNN_description.sql". Parsing happens once, on first use; a malformed
// catalog is a build mistake and aborts at start-up with a message.
#ifndef PHASEKEY_SRC_SQL_SQL_CATALOG_H_
#define PHASEKEY_SRC_SQL_SQL_CATALOG_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/migrate.h"

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

// The text of the named engine query. Aborts on an unknown name: every name
// used in the engine is checked by a test against the catalog.
const std::string& Query(std::string_view name);

}  // namespace phasekey::sql

#endif  // PHASEKEY_SRC_SQL_SQL_CATALOG_H_
