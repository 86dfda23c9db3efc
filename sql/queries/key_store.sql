-- Named queries of engine/src/runner/key_store.cc: every statement on the
-- idempotency key row. Every later write is fenced: it matches only while the
-- caller still holds the lease (owner_token) at the recovery point it expects.
-- Every timestamp is the database's now().

-- name: KeyClaim
-- The unique index on (account, idempotency_key) is the only serialization
-- point: a concurrent claimant waits here for our commit, then gets no row.
INSERT INTO phasekey.idempotency_keys
  (account, idempotency_key, bucket, flow, request_method, request_path, request_body,
   request_fingerprint, recovery_point, owner_token, locked_at, lease_expires_at, attempts)
VALUES ($1, $2, $3, $4, $5, $6, $7, decode($8, 'hex'), 'started', $9::uuid, now(),
        now() + make_interval(secs => $10::double precision / 1000), 1)
ON CONFLICT (bucket, account, idempotency_key) DO NOTHING
RETURNING id, stable_id::text, attempts, outcomes::text, 0::bigint AS age_s;

-- name: KeyGet
-- Runs first after KeyClaim found the key taken, without a lock: a replay,
-- a mismatch or an in-progress answer needs no row lock, so losers of a
-- race do not queue behind each other. Only a take-over locks (below).
SELECT id, stable_id::text, flow, request_method, request_path, encode(request_fingerprint, 'hex'),
       state::text, recovery_point, owner_token::text,
       (lease_expires_at IS NOT NULL AND lease_expires_at > now()) AS leased,
       greatest(1, ceil(extract(epoch FROM lease_expires_at - now())))::int AS retry_after_s,
       attempts, response_status, response_headers::text, encode(response_body, 'hex'), outcomes::text,
       request_body, floor(extract(epoch FROM now() - created_at))::bigint AS age_s
FROM phasekey.idempotency_keys
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2;

-- name: KeyGetForUpdate
-- The same row, locked, when the caller may take the key over; a fresh
-- READ COMMITTED snapshot, so the decision is made again on what it sees.
SELECT id, stable_id::text, flow, request_method, request_path, encode(request_fingerprint, 'hex'),
       state::text, recovery_point, owner_token::text,
       (lease_expires_at IS NOT NULL AND lease_expires_at > now()) AS leased,
       greatest(1, ceil(extract(epoch FROM lease_expires_at - now())))::int AS retry_after_s,
       attempts, response_status, response_headers::text, encode(response_body, 'hex'), outcomes::text,
       request_body, floor(extract(epoch FROM now() - created_at))::bigint AS age_s
FROM phasekey.idempotency_keys
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2
FOR UPDATE;

-- name: KeyTakeOver
-- Takes a free or expired lease with a new owner token (the row is locked).
UPDATE phasekey.idempotency_keys
SET owner_token = $3::uuid, locked_at = now(),
    lease_expires_at = now() + make_interval(secs => $4::double precision / 1000),
    attempts = attempts + 1, updated_at = now()
WHERE bucket = $5 AND account = $1 AND id = $2 AND state = 'active'
  AND (owner_token IS NULL OR lease_expires_at <= now())
RETURNING attempts;

-- name: KeyMove
-- Moves to the next recovery point, records a foreign phase's outcome and
-- renews the lease.
UPDATE phasekey.idempotency_keys
SET recovery_point = $5,
    outcomes = outcomes || $6::jsonb,
    lease_expires_at = now() + make_interval(secs => $7::double precision / 1000),
    updated_at = now()
WHERE bucket = $8 AND account = $1 AND id = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyFinish
-- Stores the final response and releases the lease, for good.
UPDATE phasekey.idempotency_keys
SET state = 'finished', recovery_point = 'finished',
    outcomes = outcomes || $5::jsonb,
    response_status = $6, response_headers = $7::jsonb, response_body = decode($8, 'hex'),
    last_error = $9, owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    finished_at = now(), updated_at = now()
WHERE bucket = $10 AND account = $1 AND id = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyRelease
-- Gives the lease back after a retryable failure; the key stays at its
-- recovery point and the re-drive worker may take it after next_attempt_at.
UPDATE phasekey.idempotency_keys
SET owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = $5,
    next_attempt_at = now() + make_interval(secs => $6::double precision / 1000),
    updated_at = now()
WHERE bucket = $7 AND account = $1 AND id = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyRenewLease
UPDATE phasekey.idempotency_keys
SET lease_expires_at = now() + make_interval(secs => $5::double precision / 1000), updated_at = now()
WHERE bucket = $6 AND account = $1 AND id = $2 AND owner_token = $3::uuid
  AND recovery_point = $4
  AND state = 'active'
RETURNING id;

-- name: KeyNotifyRedrive
-- Wakes re-drive workers when a key is released; delivered at commit.
-- Payload: "<bucket> <milliseconds until next_attempt_at>".
SELECT pg_notify('phasekey_redrive', $1);
