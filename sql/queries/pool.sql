-- Named queries of engine/src/pg/pool.cc.

-- name: PoolSessionSettings
-- Run once on each connection the pool opens with prepared statements
-- (DatabaseOptions::idle_in_transaction_timeout; $1 in milliseconds): the
-- server ends the session if it sits idle inside a transaction that long,
-- so a client that vanished mid-transaction cannot keep its key's gate and
-- row locks. Session-wide, hence only on a direct (or session-pooled)
-- connection.
SELECT set_config('idle_in_transaction_session_timeout', $1::text, false);
