// Connection strings with the safety settings phasekey puts on every
// connection: connect_timeout, TCP keepalives and tcp_user_timeout.
#ifndef PHASEKEY_SRC_PG_CONNINFO_H_
#define PHASEKEY_SRC_PG_CONNINFO_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "phasekey/database_options.h"

namespace phasekey::pg {

using ConnSettings = std::map<std::string, std::string, std::less<>>;

// The keywords `conninfo` sets, with their values, as libpq reads the string
// (PQconninfoParse: only what the string spells out, no defaults and no
// environment). nullopt when libpq cannot parse it.
std::optional<ConnSettings> ParseConnInfo(std::string_view conninfo);

// Returns `url` (a libpq URL or key/value string) with the safety settings of
// `options` added. Settings the caller already spelled out are kept as given.
// A string naming several servers (libpq multi-host: "postgresql://h1:p1,
// h2:p2/db", "host=h1,h2 port=p1,p2") also gets
// target_session_attrs=read-write unless it names one: libpq then tries the
// servers in order and keeps the first that accepts writes, the primary.
std::string HardenConnInfo(std::string_view url, const DatabaseOptions& options);

// `url` with every password replaced by "***", for logs and messages: the
// URL's user:password@ (one for all hosts of a multi-host URL), a password=
// in its query string, or a key/value password=.
std::string RedactConnInfo(std::string_view url);

}  // namespace phasekey::pg

#endif  // PHASEKEY_SRC_PG_CONNINFO_H_
