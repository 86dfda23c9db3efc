-- Named queries of engine/src/workers/redrive_worker.cc. Each works on one
-- bucket (one shard): the bucket is in every WHERE, the outer one included.
-- Candidates: active, lease free or expired, due.

-- Known points (a jsonb {flow: [points]}): the points each flow of the
-- worker's runner has or maps (Flow::KnownPoints); a key elsewhere belongs
-- to another version of its flow and is never claimed here.

-- name: RedriveDeadLetter
-- Candidates whose unclassified failures (bugs) reached the cap are
-- stopped: kept, visible, never re-driven by themselves. The same rule as
-- the runner's at its cap: dead only when the key provably made no external
-- effect ($5: {flow: [points no path through a foreign phase reaches]},
-- Flow::BeforeAnyForeignPhase, and no outcome recorded); any other key is
-- parked for an operator, never given up, since a provider may hold its
-- effect. Retryable failures and unknown outcomes wait for time
-- (RunnerOptions::give_up_after, decided by the engine itself). The error
-- class stays unclassified: the failures that reached the cap were.
UPDATE phasekey.idempotency_keys
SET state = CASE WHEN ($5::jsonb -> flow) @> to_jsonb(recovery_point) AND outcomes = '{}'::jsonb
                 THEN 'dead' ELSE 'needs_operator' END::phasekey.key_state,
    owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = concat_ws(' | ', last_error,
      CASE WHEN ($5::jsonb -> flow) @> to_jsonb(recovery_point) AND outcomes = '{}'::jsonb
           THEN 'dead-lettered: ' || failures || ' unclassified failures'
           ELSE 'parked for an operator after ' || failures
                || ' unclassified failures: a foreign phase may have taken effect' END),
    error_class = 'unclassified',
    updated_at = now()
WHERE bucket = $1 AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'active' AND next_attempt_at <= now()
    AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    AND flow = ANY($2::text[])
    AND failures >= $3
  LIMIT $4
  FOR UPDATE SKIP LOCKED)
RETURNING account, idempotency_key, state::text, id, flow, recovery_point, trace_parent, last_error;

-- name: RedriveClaimBatch
-- Takes the lease of a batch with a new owner token per key. A claim, not a
-- failure: attempts counts it, failures does not. Only keys at points the
-- runner's flows know ($6) are taken. Each comes with the request stored
-- on it, its traceparent included (for the re-drive's log lines).
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
    AND ($6::jsonb -> flow) @> to_jsonb(recovery_point)
  ORDER BY next_attempt_at
  LIMIT $4
  FOR UPDATE SKIP LOCKED)
RETURNING bucket, account, idempotency_key, flow, request_method, request_path, owner_token::text,
          coalesce(trace_parent, '');

-- name: RedriveParkStranded
-- Keys at a point their flow's version here neither has nor maps ($3 known
-- points) that have waited there longer than stranded_after ($4 seconds):
-- the binary that knew the point is gone, so an operator must settle them.
-- Parked in needs_operator with the reason; nothing is sent.
UPDATE phasekey.idempotency_keys
SET state = 'needs_operator', owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = concat_ws(' | ', last_error,
      'stranded: waited at recovery point ''' || recovery_point || ''' longer than stranded_after ('
      || $4 || ' s), and the running version of flow ''' || flow || ''' neither has it nor maps it'),
    error_class = 'stranded',
    updated_at = now()
WHERE bucket = $1 AND (bucket, account, idempotency_key) IN (
  SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys
  WHERE bucket = $1 AND state = 'active'
    AND (lease_expires_at IS NULL OR lease_expires_at <= now())
    AND flow = ANY($2::text[])
    AND NOT (($3::jsonb -> flow) @> to_jsonb(recovery_point))
    AND point_reached_at <= now() - make_interval(secs => $4::double precision)
  LIMIT $5
  FOR UPDATE SKIP LOCKED)
RETURNING flow, recovery_point, account, id, trace_parent;

-- name: RedriveCountStranded
-- The keys left alone: active, of the runner's flows, at a point their
-- flow's version here does not know ($3), per flow and point.
SELECT flow, recovery_point, count(*) FROM phasekey.idempotency_keys
WHERE bucket = $1 AND state = 'active'
  AND flow = ANY($2::text[])
  AND NOT (($3::jsonb -> flow) @> to_jsonb(recovery_point))
GROUP BY flow, recovery_point;
