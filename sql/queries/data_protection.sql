-- Named queries of engine/src/seal/data_protection.cc: erasing an account
-- and rotating the key-encryption key (phasekey/data_protection.h,
-- docs/data-protection.md). Operator actions, each audited in its own
-- transaction (AdminAuditInsert).

-- name: EraseParkUnfinished
-- The account's unfinished keys, parked for an operator: a provider call
-- may be in flight, and nothing will be sent again. A holder's next fenced
-- write finds the key no longer active and stops.
UPDATE phasekey.idempotency_keys
SET state = 'needs_operator', owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,
    last_error = concat_ws(' | ', last_error,
                           'the account was erased while this key was unfinished; a provider may hold its effect'),
    error_class = 'erased',
    updated_at = now()
WHERE bucket = $1 AND account = $2 AND state = 'active'
RETURNING id;

-- name: EraseKeyBodies
-- Drops every body stored on the account's keys, sealed or not: request
-- and response bodies, and the values of the foreign outcomes (their
-- recovery points stay). The fingerprint, the response status and headers,
-- and the stable id (what provider keys derive from) remain, so the
-- operator can still reconcile at the provider. updated_at is left alone:
-- the reaper's clocks (dead_retention) keep running from the key's stop.
UPDATE phasekey.idempotency_keys
SET request_body = NULL, response_body = NULL,
    outcomes = coalesce((SELECT jsonb_object_agg(point, 'null'::jsonb) FROM jsonb_object_keys(outcomes) point),
                        '{}'::jsonb),
    erased_at = now()
WHERE bucket = $1 AND account = $2 AND erased_at IS NULL
RETURNING id;

-- name: EraseDataKeys
-- Destroys the account's data keys: whatever was sealed under them, in any
-- copy, no longer opens.
UPDATE phasekey.data_keys
SET wrapped = NULL, erased_at = now()
WHERE bucket = $1 AND account = $2 AND erased_at IS NULL
RETURNING id;

-- name: RotateNextDataKeys
-- A batch of live data keys wrapped by another KEK than the current ($1),
-- locked until the batch commits.
SELECT bucket, id, account, kek_id, encode(wrapped, 'hex')
FROM phasekey.data_keys
WHERE erased_at IS NULL AND kek_id <> $1
ORDER BY kek_id, bucket, id
LIMIT $2
FOR UPDATE;

-- name: RotateRewrap
UPDATE phasekey.data_keys
SET kek_id = $3, wrapped = decode($4, 'hex')
WHERE bucket = $1 AND id = $2 AND erased_at IS NULL;

-- name: RotateForgetKeks
-- The KEKs no live data key is wrapped by any more, other than the current.
DELETE FROM phasekey.key_encryption_keys k
WHERE k.kek_id <> $1
  AND NOT EXISTS (SELECT 1 FROM phasekey.data_keys d WHERE d.kek_id = k.kek_id AND d.erased_at IS NULL)
RETURNING k.kek_id;
