-- The edges of exactly-once (docs/protocol.md, "Giving up"):
--
-- 1. Time, not attempt counts, decides when a key is given up. `attempts`
--    stays the number of claims (a client's take-over included); only
--    `failures`, the failures the engine could not classify (bugs), is
--    capped.
-- 2. The provider's memory bounds every path. `point_reached_at` is when the
--    key arrived at its recovery point: the phase owning that point was
--    first attempted at or after it, so `now() - point_reached_at` never
--    understates how long ago a provider first saw the phase's key.
-- 3. A key whose provider may have forgotten it, and whose phase cannot look
--    the operation up, is parked in 'needs_operator' instead of re-sending.
-- 4. The bucket count lives in the database (phasekey.deployment), written by
--    the first migrate --buckets or Runner::Open; every process reads it.
-- 5. Staged jobs and inbox events carry a bucket, leading their keys, so a
--    distributed PostgreSQL keeps each statement on one shard.

ALTER TYPE phasekey.key_state ADD VALUE 'needs_operator';

-- rearmed_at: when an operator last put the key back (phasekey keys retry);
-- the give-up time counts from it instead of created_at.
ALTER TABLE phasekey.idempotency_keys
  ADD COLUMN failures integer NOT NULL DEFAULT 0,
  ADD COLUMN point_reached_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN rearmed_at timestamptz;

-- Keys already in progress reached their point at some unknown time after
-- they were created: created_at is the bound that never understates how long
-- ago a provider may first have seen their key (now(), the column's default,
-- would make a day-old charge look new).
UPDATE phasekey.idempotency_keys SET point_reached_at = created_at WHERE state = 'active';

-- Exactly one row: the deployment's fixed settings.
CREATE TABLE phasekey.deployment (
  singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  buckets    smallint    NOT NULL CHECK (buckets BETWEEN 1 AND 32767),
  created_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE phasekey.staged_jobs
  ADD COLUMN bucket smallint NOT NULL DEFAULT 0,
  DROP CONSTRAINT staged_jobs_pkey,
  ADD PRIMARY KEY (bucket, id);

ALTER TABLE phasekey.inbox_events
  ADD COLUMN bucket smallint NOT NULL DEFAULT 0,
  DROP CONSTRAINT inbox_events_pkey,
  ADD PRIMARY KEY (bucket, provider, event_id);

DROP INDEX phasekey.inbox_events_parked;
CREATE INDEX inbox_events_parked
  ON phasekey.inbox_events (bucket, provider, object_id, id)
  WHERE state = 'parked';

DROP INDEX phasekey.inbox_events_reap;
CREATE INDEX inbox_events_reap
  ON phasekey.inbox_events (bucket, applied_at)
  WHERE state = 'applied';
