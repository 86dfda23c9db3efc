-- Named queries of engine/src/util/planted_bug.h's bugs: deliberate mistakes
-- compiled into crash-point builds only, to show that the chaos history's
-- checker catches them (docs/reliability.md). No correct build runs these.

-- name: PlantedBugSeizeKey
-- The planted bug no_fencing: makes the row look held by the caller ($3) at
-- the point it expects ($4), whoever holds it and whatever state it reached,
-- so that the fenced write that follows always matches. A holder paused
-- past its lease then overwrites the work of the one that took over.
UPDATE phasekey.idempotency_keys
SET owner_token = $3::uuid, recovery_point = $4, state = 'active',
    response_status = NULL, response_headers = NULL, response_body = NULL, finished_at = NULL,
    locked_at = clock_timestamp(), lease_expires_at = clock_timestamp() + interval '1 minute'
WHERE bucket = $5 AND account = $1 AND idempotency_key = $2;
