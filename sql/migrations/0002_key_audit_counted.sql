-- The keys the key-regeneration audit has counted (docs/clients.md, mistake
-- 1), so that each suspect is counted once by whichever reaper finds it
-- first, across restarts and across reapers: before, each reaper kept this
-- in memory and skipped everything its first sweep found, so pairs that
-- arose while no worker ran were never counted, and two reapers counted
-- each pair twice. The audit inserts a key here before it counts it (the
-- primary key decides who counts); rows are deleted once the key has left
-- every flow's window, when it can no longer form a pair.
CREATE TABLE phasekey.key_audit_counted (
  bucket smallint NOT NULL,
  key_id bigint NOT NULL,          -- the later key of a pair (idempotency_keys.id)
  counted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (bucket, key_id)
);
