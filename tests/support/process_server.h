// The PostgreSQL server a test or benchmark process works against, shared by
// tests/support and bench/support (no GoogleTest here).
#ifndef PHASEKEY_TESTS_SUPPORT_PROCESS_SERVER_H_
#define PHASEKEY_TESTS_SUPPORT_PROCESS_SERVER_H_

#include <string>
#include <string_view>

namespace phasekey::support {

// $DATABASE_URL when set; otherwise an embedded PostgreSQL 15 server that
// this process starts once, in `dir`, and stops at exit (removing `dir`). The
// server is started on a thread of its own that lives until exit, because its
// parent-death signal fires when the *thread* that started it ends and
// callers may be short-lived threads. `who` prefixes the one line saying so
// on stderr. The first call decides; later calls return the same URL, whatever
// their arguments. Thread-safe. Exits the process (status 2) with a message
// when no server can be had.
const std::string& ProcessServerUrl(const std::string& dir, std::string_view who);

// `url` with its database name replaced by `dbname` (URL or key/value form).
std::string UrlWithDatabase(std::string_view url, std::string_view dbname);

}  // namespace phasekey::support

#endif  // PHASEKEY_TESTS_SUPPORT_PROCESS_SERVER_H_
