-- Named queries of engine/src/workers/redrive_worker.cc. Each works on one
-- bucket (one shard): the bucket is in every WHERE, the outer one included.
-- Candidates: active, lease free or expired, due.

-- name: RedriveDeadLetter
-- Candidates whose unclassified failures (bugs) reached the cap go to the
-- dead-letter state: kept, visible, never re-driven by themselves. Nothing
-- else is dead-lettered here: retryable failures and unknown outcomes wait
-- for time (RunnerOptions::give_up_after, decided by the engine itself).
UPDATE phasekey.idempotency_keys
SET state = 'dead', owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = concat_ws(' | ', last_error, 'dead-lettered: ' || failures || ' unclassified failures'),
    updated_at = now()
WHERE bucket = $1 AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'active' AND next_attempt_at <= now()
    AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    AND flow = ANY($2::text[])
    AND failures >= $3
  LIMIT $4
  FOR UPDATE SKIP LOCKED)
RETURNING account, idempotency_key;

-- name: RedriveClaimBatch
-- Takes the lease of a batch with a new owner token per key. A claim, not a
-- failure: attempts counts it, failures does not.
UPDATE phasekey.idempotency_keys
SET owner_token = gen_random_uuid(), locked_at = clock_timestamp(),
    lease_expires_at = clock_timestamp() + make_interval(secs => $5::double precision / 1000),
    attempts = attempts + 1, updated_at = now()
WHERE bucket = $1 AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'active' AND next_attempt_at <= now()
    AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    AND flow = ANY($2::text[])
    AND failures < $3
  ORDER BY next_attempt_at
  LIMIT $4
  FOR UPDATE SKIP LOCKED)
RETURNING bucket, account, idempotency_key, flow, request_method, request_path, request_body,
          owner_token::text;
