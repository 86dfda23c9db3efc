-- The client's key is the row's primary key (docs/benchmarks.md, issue 16).
--
-- Every statement on a key row finds it by (bucket, account,
-- idempotency_key): the claim, the fenced writes (sql/queries/key_store.sql),
-- the re-drive and reaper batches, the operator commands and the console.
-- The primary key on (bucket, account, id) served none of them, yet every
-- claim and every finish (a regular update: it changes `state`, which the
-- partial indexes read) wrote an entry into it. The unique constraint on the
-- key becomes the primary key, so each row version has one index entry
-- fewer. `id` stays, unique by its identity, for logs and operators; no
-- query looks a row up by it. The distribution column (bucket) leads the new
-- primary key as it led the old one.
--
-- PostgreSQL cannot promote an index that already backs a constraint, so the
-- unique index is built again as the primary key's, under the exclusive lock
-- this migration holds anyway: on a large table, run it when a short pause of
-- claims is acceptable (the build reads the table once).
ALTER TABLE phasekey.idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE phasekey.idempotency_keys DROP CONSTRAINT idempotency_keys_account_key;
ALTER TABLE phasekey.idempotency_keys
  ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (bucket, account, idempotency_key);

-- The console's page of dead and needs_operator keys walks this index in
-- primary-key order (sql/queries/console_queries.sql, ConsoleKeysPage).
DROP INDEX phasekey.idempotency_keys_attention;
CREATE INDEX idempotency_keys_attention
  ON phasekey.idempotency_keys (bucket, account, idempotency_key)
  WHERE state IN ('dead', 'needs_operator');
