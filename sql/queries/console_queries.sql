-- Named queries of engine/tools/console/console_queries.cc: what the operator
-- console shows beyond the CLI's (sql/queries/key_admin.sql, which it also
-- uses), and its audit trail. Operator tools, not on a request's path.

-- name: ConsoleKeysPage
-- One page of keys in primary-key order (bucket, account, idempotency_key),
-- after the cursor ($11, $12, $13): keyset pagination on the primary key's
-- index, so a page costs the same at any depth. $1-$10 the operator's key
-- filter, as in sql/queries/key_admin.sql (which says what each costs): an
-- account is a range of the same index; a state filter of dead or
-- needs_operator walks the small partial index of idempotency_keys_attention
-- (sql/migrations/0001_baseline.sql) instead; the other filters are checked
-- on the rows the walk visits, so a rare value may walk far for its page.
-- $14 rows.
SELECT bucket, account, id, idempotency_key, flow, state::text, recovery_point, attempts,
       floor(extract(epoch FROM now() - created_at))::bigint AS age_s, coalesce(last_error, ''),
       error_class::text
FROM phasekey.idempotency_keys
WHERE ($1::text IS NULL OR (bucket, account) = ($2::smallint, $1::text))
  AND ($3::text IS NULL OR flow = $3)
  AND ($4::phasekey.key_state IS NULL OR state = $4::phasekey.key_state)
  AND ($5::text IS NULL OR recovery_point = $5)
  AND ($6::phasekey.error_class IS NULL OR error_class = $6::phasekey.error_class)
  AND (NOT $7::bool OR (state = 'active' AND ((owner_token IS NOT NULL AND lease_expires_at <= now())
                                               OR attempts >= $8)))
  AND created_at <= now() - make_interval(secs => $9::double precision)
  AND ($10::double precision IS NULL OR created_at > now() - make_interval(secs => $10::double precision))
  AND (bucket, account, idempotency_key) > ($11::int, $12::text, $13::text)
ORDER BY bucket, account, idempotency_key
LIMIT $14;

-- name: ConsoleAttention
-- Keys an operator should look at, oldest first: stuck (active with an
-- expired lease, or past their next attempt time while nobody holds them),
-- dead, or parked for an operator. $1 rows.
SELECT account, idempotency_key, flow, state::text, recovery_point, attempts,
       floor(extract(epoch FROM now() - created_at))::bigint AS age_s, coalesce(last_error, ''),
       CASE WHEN state = 'active' AND owner_token IS NOT NULL THEN 'lease expired'
            WHEN state = 'active' THEN 'due, not picked up'
            ELSE state::text END AS why
FROM phasekey.idempotency_keys
WHERE state IN ('dead', 'needs_operator')
   OR (state = 'active' AND ((owner_token IS NOT NULL AND lease_expires_at <= now())
                             OR (owner_token IS NULL AND next_attempt_at <= now())))
ORDER BY created_at
LIMIT $1;

-- name: ConsoleSummary
-- Counts of the overview: stuck (as in ConsoleAttention), dead, parked for
-- an operator, due re-drives, and the age of the oldest key still to finish
-- (active or parked; a dead key was given up).
SELECT count(*) FILTER (WHERE state = 'active' AND ((owner_token IS NOT NULL AND lease_expires_at <= now())
                                                   OR (owner_token IS NULL AND next_attempt_at <= now()))),
       count(*) FILTER (WHERE state = 'dead'),
       count(*) FILTER (WHERE state = 'needs_operator'),
       count(*) FILTER (WHERE state = 'active' AND next_attempt_at <= now()
                          AND (lease_expires_at IS NULL OR lease_expires_at <= now())),
       floor(extract(epoch FROM now() - min(created_at) FILTER (WHERE state IN ('active', 'needs_operator'))))::bigint
FROM phasekey.idempotency_keys;

-- name: ConsolePhaseCounts
-- Keys per flow, recovery point and state, for the flows screen.
SELECT flow, recovery_point, state::text, count(*)
FROM phasekey.idempotency_keys
GROUP BY flow, recovery_point, state
ORDER BY flow, recovery_point, state;

-- name: ConsoleAuditForKey
-- A key's audit trail, newest first.
SELECT at::text, actor, action, succeeded, outcome
FROM phasekey.operator_audit
WHERE account = $1 AND idempotency_key = $2
ORDER BY id DESC
LIMIT 200;
