// QueryRef: the typed handle of one named query of the catalog
// (sql/sql_catalog.h). The build generates one per query from sql/queries
// (sql/generate_query_handles.py writes <build>/generated/sql/queries.h):
//
//   namespace phasekey::sql::q {
//   inline constexpr QueryRef<3> KeyClaim{"KeyClaim", 17};
//   }
//
// N is the query's number of parameters ($1..$N), so the checked calls
// (pg::Exec/Exec0/Exec1 in pg/statements.h, pg::ExecuteText in
// pg/transaction.h) refuse at compile time a call with another number of
// arguments, and a query that does not exist is a name the compiler does not
// know. `index` is the query's position in EngineQueries(), for a lookup
// without a search; sql::Query(handle) checks that it names that query.
//
// Handles are made by the generated header only; a test may make one for a
// statement it prepares itself, as long as it never asks the catalog for its
// text.
#ifndef PHASEKEY_SRC_SQL_QUERY_REF_H_
#define PHASEKEY_SRC_SQL_QUERY_REF_H_

#include <cstddef>
#include <string_view>

namespace phasekey::sql {

template <std::size_t N>
struct QueryRef {
  static constexpr std::size_t kParameters = N;
  std::string_view name;  // the "-- name:" of the query, also its prepared statement's name
  std::size_t index;      // its position in EngineQueries()
};

// What the generated header lists of every query in q::kAll, in catalog
// order: for tests that compare the generator's counts with the server's.
struct QueryInfo {
  std::string_view name;
  std::size_t parameters;
  bool simple;  // "-- protocol: simple"
};

}  // namespace phasekey::sql

#endif  // PHASEKEY_SRC_SQL_QUERY_REF_H_
