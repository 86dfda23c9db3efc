-- Named queries of engine/src/workers/redrive_worker.cc. Each works on one
-- bucket (one shard). Candidates: active, lease free or expired, due.

-- name: RedriveDeadLetter
-- Candidates past the attempt cap or the horizon go to the dead-letter
-- state: kept, visible, never re-driven by themselves.
UPDATE phasekey.idempotency_keys
SET state = 'dead', owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = concat_ws(' | ', last_error,
      CASE WHEN attempts >= $3 THEN 'dead-lettered: ' || attempts || ' attempts'
           ELSE 'dead-lettered: older than the re-drive horizon' END),
    updated_at = now()
WHERE (bucket, account, id) IN (
  SELECT bucket, account, id FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'active' AND next_attempt_at <= now()
    AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    AND flow = ANY($2::text[])
    AND (attempts >= $3 OR created_at < now() - make_interval(secs => $4::double precision))
  LIMIT $5
  FOR UPDATE SKIP LOCKED)
RETURNING account, idempotency_key;

-- name: RedriveClaimBatch
-- Takes the lease of a batch with a new owner token per key.
UPDATE phasekey.idempotency_keys
SET owner_token = gen_random_uuid(), locked_at = now(),
    lease_expires_at = now() + make_interval(secs => $6::double precision / 1000),
    attempts = attempts + 1, updated_at = now()
WHERE (bucket, account, id) IN (
  SELECT bucket, account, id FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'active' AND next_attempt_at <= now()
    AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    AND flow = ANY($2::text[])
    AND attempts < $3 AND created_at >= now() - make_interval(secs => $4::double precision)
  ORDER BY next_attempt_at
  LIMIT $5
  FOR UPDATE SKIP LOCKED)
RETURNING bucket, account, idempotency_key, flow, request_method, request_path, request_body,
          owner_token::text;
