-- Named queries of engine/tools/embedded_postgres/embedded_postgres.cc: what the embedded
-- server's set-up runs itself, before any client connects.

-- name: EmbeddedPostgresSetPassword
-- A new password for the embedded server's role, on a cluster made before
-- the server asked for passwords (or whose password file was removed); run
-- through postgres --single while the server is down. $1 the role, already
-- quoted as an identifier; $2 the password (its SCRAM verifier), as a
-- quoted literal.
ALTER ROLE $1 PASSWORD $2;
