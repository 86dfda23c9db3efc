// One SQL file compiled into a binary by the phasekey_embed_sql CMake
// function. Applications embed their own migrations the same way and hand
// them to phasekey::Migrate (see migrate.h).
#ifndef PHASEKEY_SQL_FILE_H_
#define PHASEKEY_SQL_FILE_H_

#include <string_view>

namespace phasekey {

// A view of static data: both strings point into the binary and live as
// long as the program.
struct SqlFile {
  std::string_view name;  // base file name, e.g. "0001_idempotency_keys.sql"
  std::string_view text;  // the file's bytes, verbatim
};

}  // namespace phasekey

#endif  // PHASEKEY_SQL_FILE_H_
