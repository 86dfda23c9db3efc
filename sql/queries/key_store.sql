-- Named queries of engine/src/runner/key_store.cc: every statement on the
-- idempotency key row. Every later write is fenced: it matches only while the
-- caller still holds the lease (owner_token) at the recovery point it expects.
-- Rows are addressed by their primary key (bucket, account, idempotency_key).
-- Every timestamp is the database's: now() (the transaction's start) for
-- bookkeeping, clock_timestamp() for lease expiries, so a claim that waited
-- on a lock still gets its whole lease from the moment it was granted.

-- name: KeyClaim
-- protocol: simple
-- Claims the key, or returns the row that holds it, or says another
-- claimant is inserting it right now, in one statement ($11: the version of
-- the flow's graph, kept on the key; $13: the request's traceparent, NULL
-- when none, stored on a new key only) (one round trip for
-- a replay, a mismatch or a concurrent request). The unique index on
-- (bucket, account, idempotency_key) is the only serialization point. A key
-- already committed is seen by `existing` first, so nothing is inserted:
-- no identity value is drawn and no tuple is written. A key nobody has
-- committed is gated by a transaction-scoped advisory lock on its hash,
-- taken without waiting: the claimant that gets it inserts, one that does
-- not gets `inserted` NULL (busy: answer 409 at once instead of queueing
-- behind the holder's transaction). The gate is an optimisation for losers,
-- never the serialization point: two claimants that both pass it (a hash
-- collision cannot make two pass; a holder that committed between our
-- snapshot and our try can) still meet in the unique index, and when no
-- branch returns a row the caller reads the key with KeyGet, in a new
-- snapshot. A hash collision with another key only answers a 409 early.
-- $7 is the request body as hex (sealed under the data key $12 when that is
-- not NULL: docs/data-protection.md). A new key's `erased` says that data
-- key was destroyed meanwhile (the account was erased after the caller
-- cached it): the caller rolls back and claims again under a new one.
WITH existing AS (
  SELECT false AS inserted, k.* FROM phasekey.key_rows_v2 k
  WHERE bucket = $3 AND account = $1 AND idempotency_key = $2
), gate AS (
  SELECT pg_try_advisory_xact_lock(
           hashtextextended('phasekey.key:' || $3::text || ':' || $1::text || ':' || $2::text, 0)) AS free
  WHERE NOT EXISTS (SELECT 1 FROM existing)
), claimed AS (
  INSERT INTO phasekey.idempotency_keys
    (account, idempotency_key, bucket, flow, request_method, request_path, request_body,
     request_fingerprint, recovery_point, owner_token, locked_at, lease_expires_at, attempts, flow_version,
     data_key_id, trace_parent)
  SELECT $1::text, $2::text, $3::smallint, $4::text, $5::text, $6::text, decode($7::text, 'hex'),
         decode($8::text, 'hex'), 'started', $9::uuid, clock_timestamp(),
         clock_timestamp() + make_interval(secs => $10::double precision / 1000), 1, $11::text, $12::bigint,
         $13::text
  WHERE (SELECT free FROM gate)
  ON CONFLICT (bucket, account, idempotency_key) DO NOTHING
  RETURNING id, stable_id, attempts, outcomes
)
SELECT * FROM existing
UNION ALL
SELECT true, id, stable_id::text, NULL, NULL, NULL, NULL, NULL, 'started', NULL, true, 1, attempts, 0, NULL, NULL,
       NULL, outcomes::text, NULL, 0::bigint, 0::bigint, '', $3::smallint, $1::text, $2::text, $12::bigint,
       ($12::bigint IS NOT NULL AND NOT EXISTS (SELECT 1 FROM phasekey.data_keys d
                                                WHERE d.bucket = $3 AND d.id = $12::bigint AND d.erased_at IS NULL)),
       $13::text
FROM claimed
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, $3::smallint, $1::text, $2::text, NULL, NULL, NULL
FROM gate WHERE NOT free;

-- name: KeyClaimDeferred
-- protocol: simple
-- KeyClaim for a new key whose flow begins with an atomic phase: the same
-- answers for a key already committed or being claimed, but the claimant
-- that gets the gate inserts nothing yet. It runs the first phase in this
-- transaction and writes the row once, already at the phase's next point,
-- with KeyClaimMoved or KeyClaimFinished sent with COMMIT (one row version
-- fewer; the gate keeps other claimants out until then). The row's id and
-- stable_id are drawn here (`reserved`), so the phase sees them; the unique
-- index still decides, at that insert. Without an INSERT this statement is
-- also cheaper to start and, unprepared, to plan. $4: the data key the row
-- will be sealed under (NULL: none); `erased` as in KeyClaim.
WITH existing AS (
  SELECT false AS inserted, k.* FROM phasekey.key_rows_v2 k
  WHERE bucket = $3 AND account = $1 AND idempotency_key = $2
), gate AS (
  SELECT pg_try_advisory_xact_lock(
           hashtextextended('phasekey.key:' || $3::text || ':' || $1::text || ':' || $2::text, 0)) AS free
  WHERE NOT EXISTS (SELECT 1 FROM existing)
), reserved AS (
  SELECT nextval('phasekey.idempotency_keys_id_seq'::regclass) AS id, gen_random_uuid() AS stable_id
  FROM gate WHERE free
)
SELECT * FROM existing
UNION ALL
SELECT true, id, stable_id::text, NULL, NULL, NULL, NULL, NULL, 'started', NULL, true, 1, 1, 0, NULL, NULL,
       NULL, '{}', NULL, 0::bigint, 0::bigint, '', $3::smallint, $1::text, $2::text, $4::bigint,
       ($4::bigint IS NOT NULL AND NOT EXISTS (SELECT 1 FROM phasekey.data_keys d
                                               WHERE d.bucket = $3 AND d.id = $4::bigint AND d.erased_at IS NULL)),
       NULL
FROM reserved
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, $3::smallint, $1::text, $2::text, NULL, NULL, NULL
FROM gate WHERE NOT free;

-- name: KeyClaimMoved
-- protocol: simple
-- A deferred claim's row (KeyClaimDeferred), written once at the first
-- move: already at the next point with its outcomes and a lease. Sent with
-- COMMIT. A claimant that committed the key after our claim's snapshot wins
-- the unique index here: nothing is inserted and PK001
-- (phasekey.fence_held) rolls the whole transaction back, the first
-- phase's work with it. $17: the request's traceparent (KeyClaim's $13).
WITH inserted AS (
  INSERT INTO phasekey.idempotency_keys
    (id, stable_id, account, idempotency_key, bucket, flow, request_method, request_path, request_body,
     request_fingerprint, recovery_point, outcomes, owner_token, locked_at, lease_expires_at, attempts,
     flow_version, data_key_id, trace_parent)
  OVERRIDING SYSTEM VALUE
  VALUES ($1::bigint, $2::uuid, $3::text, $4::text, $5::smallint, $6::text, $7::text, $8::text,
          decode($9::text, 'hex'), decode($10::text, 'hex'), $11::text, $12::jsonb, $13::uuid, now(),
          clock_timestamp() + make_interval(secs => $14::double precision / 1000), 1, $15::text, $16::bigint,
          $17::text)
  ON CONFLICT (bucket, account, idempotency_key) DO NOTHING
  RETURNING id
)
SELECT phasekey.fence_held(count(*)) FROM inserted;

-- name: KeyClaimFinished
-- protocol: simple
-- A deferred claim's row when the first phase already answered: written
-- once, finished, with the response and without the request body (a
-- finished key keeps only its fingerprint). Sent with COMMIT; fenced by the
-- unique index like KeyClaimMoved. $17: the class of $14 (the last error);
-- $18: the request's traceparent.
WITH inserted AS (
  INSERT INTO phasekey.idempotency_keys
    (id, stable_id, account, idempotency_key, bucket, flow, request_method, request_path,
     request_fingerprint, state, recovery_point, outcomes, attempts, response_status, response_headers,
     response_body, last_error, finished_at, flow_version, data_key_id, error_class, trace_parent)
  OVERRIDING SYSTEM VALUE
  VALUES ($1::bigint, $2::uuid, $3::text, $4::text, $5::smallint, $6::text, $7::text, $8::text,
          decode($9::text, 'hex'), 'finished', 'finished', $10::jsonb, 1, $11::int, $12::jsonb,
          decode($13::text, 'hex'), $14::text, now(), $15::text, $16::bigint, $17::phasekey.error_class, $18::text)
  ON CONFLICT (bucket, account, idempotency_key) DO NOTHING
  RETURNING id
)
SELECT phasekey.fence_held(count(*)) FROM inserted;

-- name: KeyClaimExisting
-- protocol: simple
-- The claim of a key that must already exist (Runner::Resume: the re-drive
-- worker took its lease): the row, in the claim's shape, or nothing when
-- the key has vanished. Never inserts, so a vanished key is reported, not
-- created again with a new stable id (a new provider key).
SELECT false AS inserted, k.* FROM phasekey.key_rows_v2 k
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2;

-- name: KeyGet
-- Reads the row when KeyClaim found neither: another claimant committed the
-- key while we waited. Without a lock: a replay, a mismatch or an
-- in-progress answer needs none, so losers of a race do not queue behind
-- each other. Only a take-over locks (below).
SELECT * FROM phasekey.key_rows_v2
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2;

-- name: KeyGetForUpdate
-- The same row, locked, when the caller may take the key over; a fresh
-- READ COMMITTED snapshot, so the decision is made again on what it sees.
SELECT * FROM phasekey.key_rows_v2
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2
FOR UPDATE;

-- name: KeyTakeOver
-- Takes a free or expired lease with a new owner token (the row is locked).
-- A take-over is a claim, counted in attempts, never a failure.
UPDATE phasekey.idempotency_keys
SET owner_token = $3::uuid, locked_at = clock_timestamp(),
    lease_expires_at = clock_timestamp() + make_interval(secs => $4::double precision / 1000),
    attempts = attempts + 1, updated_at = now()
WHERE bucket = $5 AND account = $1 AND idempotency_key = $2 AND state = 'active'
  AND (owner_token IS NULL OR lease_expires_at <= now())
RETURNING attempts;

-- name: KeyMove
-- protocol: simple
-- Moves to the next recovery point, records a foreign phase's outcome and
-- renews the lease. Sent with COMMIT: raises PK001 (phasekey.fence_held)
-- when the fence does not match, so nothing commits.
WITH moved AS (
  UPDATE phasekey.idempotency_keys
  SET recovery_point = $5,
      point_reached_at = now(),
      outcomes = outcomes || $6::jsonb,
      lease_expires_at = clock_timestamp() + make_interval(secs => $7::double precision / 1000),
      updated_at = now()
  WHERE bucket = $8 AND account = $1 AND idempotency_key = $2 AND owner_token = $3::uuid
    AND recovery_point = $4
    AND state = 'active'
  RETURNING id
)
SELECT phasekey.fence_held(count(*)) FROM moved;

-- name: KeyFinish
-- protocol: simple
-- Stores the final response, drops the request body (the fingerprint
-- remains for the 422) and releases the lease, for good. Sent with COMMIT,
-- fenced like KeyMove. $9 the error of a failure's response and $11 its
-- class (both NULL for a success: the key holds no error).
WITH finished AS (
  UPDATE phasekey.idempotency_keys
  SET state = 'finished', recovery_point = 'finished',
      outcomes = outcomes || $5::jsonb,
      response_status = $6, response_headers = $7::jsonb, response_body = decode($8, 'hex'),
      request_body = NULL, last_error = $9, error_class = $11::phasekey.error_class,
      owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
      finished_at = now(), updated_at = now()
  WHERE bucket = $10 AND account = $1 AND idempotency_key = $2 AND owner_token = $3::uuid
    AND recovery_point = $4
    AND state = 'active'
  RETURNING id
)
SELECT phasekey.fence_held(count(*)) FROM finished;

-- name: KeyRelease
-- Gives the lease back after a retryable failure. Foreign outcomes not yet
-- recorded are recorded here ($8 the point they lead to, $9 the outcomes),
-- so money taken is never forgotten; the key then waits at that point for a
-- client retry or the re-drive worker (after next_attempt_at). $10: the
-- failure's class (phasekey.error_class); unclassified (a bug) is the only
-- one that counts towards the cap.
UPDATE phasekey.idempotency_keys
SET owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = $5, error_class = $10::phasekey.error_class,
    next_attempt_at = now() + make_interval(secs => $6::double precision / 1000),
    point_reached_at = CASE WHEN recovery_point = $8 THEN point_reached_at ELSE now() END,
    recovery_point = $8,
    outcomes = outcomes || $9::jsonb,
    failures = failures + CASE WHEN $10::phasekey.error_class = 'unclassified' THEN 1 ELSE 0 END,
    updated_at = now()
WHERE bucket = $7 AND account = $1 AND idempotency_key = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyStop
-- Ends a key without a response: 'dead' (given up, nothing left at a
-- provider) or 'needs_operator' (a provider may hold an effect nobody can
-- verify). Outcomes not yet recorded are recorded ($6 the point they lead
-- to, $7 the outcomes); kept for the operator (the reaper deletes dead keys
-- after ReaperOptions::dead_retention, parked ones only when
-- needs_operator_retention is set). $10 the class of `why` ($8).
UPDATE phasekey.idempotency_keys
SET state = $5::phasekey.key_state,
    owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    point_reached_at = CASE WHEN recovery_point = $6 THEN point_reached_at ELSE now() END,
    recovery_point = $6,
    outcomes = outcomes || $7::jsonb,
    last_error = concat_ws(' | ', last_error, $8::text), error_class = $10::phasekey.error_class,
    updated_at = now()
WHERE bucket = $9 AND account = $1 AND idempotency_key = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyRenewLease
UPDATE phasekey.idempotency_keys
SET lease_expires_at = clock_timestamp() + make_interval(secs => $5::double precision / 1000), updated_at = now()
WHERE bucket = $6 AND account = $1 AND idempotency_key = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyNotifyRedrive
-- Wakes re-drive workers when a key is released; delivered at commit.
-- Payload: "<bucket> <milliseconds until next_attempt_at>".
SELECT pg_notify('phasekey_redrive', $1);
