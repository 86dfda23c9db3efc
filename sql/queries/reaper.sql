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

-- name: ReaperDeleteDeadBatch
-- Dead keys stopped longer ago than the dead retention ($2 s), one bounded
-- batch of one bucket. A key's updated_at is the time it was stopped:
-- KeyStop and RedriveDeadLetter set it; afterwards only `keys retry`
-- (AdminKeyRetry, which makes it active) and an account's erasure
-- (EraseKeyBodies, which sets it anew, the bodies being gone) write it. The state is a literal,
-- not a parameter, so even a generic plan can use the small partial index
-- idempotency_keys_attention (bucket, ...) WHERE state IN ('dead',
-- 'needs_operator'): it walks the bucket's dead and parked keys only and
-- filters them by age. No ORDER BY: every key past the retention goes in
-- this sweep (batches repeat until one is short), so the order would only
-- cost a sort. The outer WHERE repeats the state, as a second guard; the
-- row lock already keeps `keys retry` from reviving a key being deleted.
DELETE FROM phasekey.idempotency_keys
WHERE bucket = $1 AND state = 'dead' AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'dead'
    AND updated_at < now() - make_interval(secs => $2::double precision)
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING id;

-- name: ReaperDeleteNeedsOperatorBatch
-- Keys parked for an operator longer ago than needs_operator_retention ($2
-- s, from updated_at, set when the key was parked: KeyStop,
-- RedriveDeadLetter, RedriveParkStranded), one bounded batch of
-- one bucket; run only when that retention is set (by default such keys
-- stay until an operator resolves them). Same plan as ReaperDeleteDeadBatch.
DELETE FROM phasekey.idempotency_keys
WHERE bucket = $1 AND state = 'needs_operator' AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'needs_operator'
    AND updated_at < now() - make_interval(secs => $2::double precision)
  LIMIT $3
  FOR UPDATE SKIP LOCKED)
RETURNING id;

-- name: ReaperCountKept
-- What the reaper keeps although it is past the (finished keys') retention:
-- unfinished keys, and dead keys not (yet) past the dead retention, reported
-- for the operator. Run after the deletes, so the dead keys counted are the
-- ones still there.
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
