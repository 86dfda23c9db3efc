-- Named queries of engine/src/workers/reaper.cc. Each works on one bucket
-- (one shard): the bucket is in every WHERE, the outer one included.

-- name: ReaperDeleteBatch
-- Finished keys older than the retention, one bounded batch of one bucket.
DELETE FROM phasekey.idempotency_keys
WHERE bucket = $1 AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'finished'
    AND finished_at < now() - make_interval(secs => $2::double precision)
  ORDER BY finished_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING id;

-- name: ReaperCountKept
-- What the reaper keeps although it is past the retention: unfinished and
-- dead-lettered keys, reported for the operator.
SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE state = 'dead')
FROM phasekey.idempotency_keys
WHERE bucket = $1 AND state <> 'finished'
  AND created_at < now() - make_interval(secs => $2::double precision);

-- name: ReaperCountStates
-- Keys in progress, dead-lettered and parked for an operator in one bucket,
-- for the gauges.
SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE state = 'dead'),
       count(*) FILTER (WHERE state = 'needs_operator')
FROM phasekey.idempotency_keys
WHERE bucket = $1 AND state <> 'finished';

-- name: ReaperDeleteInboxBatch
-- Applied inbox events older than the inbox retention, one bounded batch.
-- Parked events are never deleted.
DELETE FROM phasekey.inbox_events
WHERE bucket = $1 AND (bucket, provider, event_id) IN (
  SELECT bucket, provider, event_id FROM phasekey.inbox_events
  WHERE bucket = $1 AND state = 'applied'
    AND applied_at < now() - make_interval(secs => $2::double precision)
  ORDER BY applied_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING id;

-- name: ReaperCountParkedInbox
-- Parked inbox events (never reaped), reported for the operator.
SELECT count(*) FROM phasekey.inbox_events WHERE bucket = $1 AND state = 'parked';
