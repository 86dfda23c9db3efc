-- Named queries of engine/tools/admin/provider_keys.cc: the database's half
-- of `phasekey keys reconcile` (phasekey/tools/provider_keys.h).

-- name: ReconcileKeysSince
-- The keys that may have called a provider at or after $1 (Unix seconds):
-- every key not finished (a foreign phase may have run at any time before
-- it stopped), and every key finished at or after $1 (its calls came before
-- it finished). Oldest first. Spans every bucket and reads every unfinished
-- key: an operator's check after a restore, not on a request's path.
SELECT account, idempotency_key, flow, stable_id::text
FROM phasekey.idempotency_keys
WHERE state <> 'finished' OR finished_at >= to_timestamp($1::double precision)
ORDER BY created_at, id;
