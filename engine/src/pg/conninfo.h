// Connection strings with the safety settings phasekey puts on every
// connection: connect_timeout, TCP keepalives and tcp_user_timeout.
#ifndef PHASEKEY_SRC_PG_CONNINFO_H_
#define PHASEKEY_SRC_PG_CONNINFO_H_

#include <string>
#include <string_view>

#include "phasekey/database_options.h"

namespace phasekey::pg {

// Returns `url` (a libpq URL or key/value string) with the safety settings of
// `options` added. Settings the caller already spelled out are kept as given.
std::string HardenConnInfo(std::string_view url, const DatabaseOptions& options);

// `url` with every password replaced by "***", for logs and messages.
std::string RedactConnInfo(std::string_view url);

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_CONNINFO_H_
