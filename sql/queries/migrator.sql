-- Named queries of engine/src/pg/migrator.cc: the bookkeeping of applied
-- schema migrations. They run before any migration, so they create what they
-- need themselves.

-- name: MigrationSetLockTimeout
-- For this transaction only, so a connection pooler hands back a clean
-- session.
SELECT set_config('lock_timeout', $1, true);

-- name: MigrationLock
-- One transaction-scoped advisory lock serializes every migrator on the
-- server. Transaction-scoped, never session-level: through a pooler in
-- transaction mode (PgBouncer) a session lock would stay on the pooled
-- server connection after its client died, and block every later migrator.
SELECT pg_advisory_xact_lock(hashtextextended('phasekey.migrate', 0));

-- name: MigrationBootstrapSchema
CREATE SCHEMA IF NOT EXISTS phasekey;

-- name: MigrationBootstrapTable
CREATE TABLE IF NOT EXISTS phasekey.schema_migrations (
  component  text        NOT NULL CHECK (char_length(component) BETWEEN 1 AND 100),
  version    integer     NOT NULL CHECK (version >= 1),
  name       text        NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (component, version)
);

-- name: MigrationTableExists
SELECT to_regclass('phasekey.schema_migrations') IS NOT NULL;

-- name: MigrationCurrentVersion
SELECT coalesce(max(version), 0) FROM phasekey.schema_migrations WHERE component = $1;

-- name: MigrationHistory
-- The versions of a component applied so far and the names they were applied
-- under, to tell this binary's migrations from another history's (a
-- development database from before a baseline).
SELECT version, name FROM phasekey.schema_migrations WHERE component = $1 ORDER BY version;

-- name: MigrationRecord
INSERT INTO phasekey.schema_migrations (component, version, name) VALUES ($1, $2, $3);
