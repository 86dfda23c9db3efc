// Authentication of the embedded server: a random password for its role,
// kept in a pgpass file (0600) in base_dir, stored in the cluster as a
// SCRAM-SHA-256 secret, and a pg_hba.conf that asks for it on the socket and
// on 127.0.0.1 (docs/database.md, "Who can connect"). Not part of the public
// API.
//
// None of these functions throws (apart from std::bad_alloc); failures come
// back as a Status.
#ifndef PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_AUTH_H_
#define PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_AUTH_H_

#include <string>
#include <string_view>

#include "embedded_postgres/embedded_postgres_internal.h"
#include "phasekey/status.h"

namespace phasekey::pg::embedded {

// The name of the password file inside base_dir (libpq's pgpass format).
inline constexpr char kPasswordFileName[] = "pgpass";

// A new password: 32 random bytes (OpenSSL's RAND_bytes) as 64 hex digits,
// so it needs no quoting in a URL, a conninfo string or a pgpass line.
Result<std::string> NewPassword();

// The SCRAM-SHA-256 secret PostgreSQL stores for `password` (RFC 7677, the
// form of pg_authid.rolpassword): "SCRAM-SHA-256$4096:<salt>$<StoredKey>:
// <ServerKey>". Given to initdb and ALTER ROLE instead of the password, so
// that the password itself never reaches the server or its log.
Result<std::string> ScramSecret(std::string_view password);

// Writes `path` in libpq's pgpass format, 0600, owned by `user` when we
// switch to it: `role` with `password` on 127.0.0.1, localhost and the
// socket directory, any port and database. Written to a temporary file and
// renamed, so a reader never sees half of it.
Status WritePasswordFile(const std::string& path, const std::string& socket_dir, const std::string& role,
                         const std::string& password, const ServerUser& user);

// The password in `path` (the last field of its first line). kNotFound when
// there is no such file; kFailedPrecondition when it cannot be read (another
// user's server) or holds no password.
Result<std::string> ReadPasswordFile(const std::string& path);

// Writes `secret` alone to `path` (0600, handed to `user`): initdb's
// --pwfile, or the ALTER ROLE script run by postgres --single.
Status WriteSecretFile(const std::string& path, const std::string& text, const ServerUser& user);

// Replaces "<data_dir>/pg_hba.conf": scram-sha-256 for every role, on the
// unix socket and on 127.0.0.1/32; nothing else.
Status WriteHbaConf(const std::string& data_dir, const ServerUser& user);

}  // namespace phasekey::pg::embedded

#endif  // PHASEKEY_TOOLS_SRC_EMBEDDED_POSTGRES_EMBEDDED_POSTGRES_AUTH_H_
