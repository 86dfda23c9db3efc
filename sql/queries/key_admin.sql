-- Named queries of engine/tools/admin/key_admin.cc: the operator's view of the
-- keys (phasekey keys/stats/reap). Listing and statistics span every bucket:
-- they are operator tools, not on a request's path.

-- The operator's key filter (admin::KeyFilter), the same in AdminKeysList,
-- AdminBatchCount and the batch actions below: $1 account (with $2 its
-- bucket, so that the primary key's index finds the account's keys), $3
-- flow, $4 state, $5 recovery point, $6 error class (NULL: any), $7 stuck
-- (active with an expired lease or at least $8 claims), $9 created at least
-- this many seconds ago, $10 created less than this many seconds ago (NULL:
-- no bound). What it costs, at 10^6 keys: each statement is planned for
-- its own values (a new connection per command or console request, so a
-- custom plan), so an absent filter costs nothing. With an account it is
-- one range of the primary key; with state dead or needs_operator (and no
-- account) a walk of the small partial index idempotency_keys_attention;
-- otherwise a sequential scan of the key table (flow, recovery point, error
-- class and age are not indexed: the request path would pay for such
-- indexes on every write, and an operator's listing can afford a scan).

-- name: AdminKeysList
-- Oldest first, at most $11.
SELECT account, idempotency_key, flow, state::text, recovery_point, attempts,
       (owner_token IS NOT NULL AND lease_expires_at > now()) AS leased,
       (owner_token IS NOT NULL AND lease_expires_at <= now()) AS lease_expired,
       floor(extract(epoch FROM now() - created_at))::bigint AS age_s,
       coalesce(last_error, ''), error_class::text, owner_token::text
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
ORDER BY created_at
LIMIT $11;

-- name: AdminBatchCount
-- The dry run of a batch action: how many keys the filter ($1-$10) matches
-- that the action would change. $11 the action: 'retry' (dead keys; with
-- $12 also keys parked for an operator, as AdminKeyRetry) or 'release'
-- (active keys whose lease expired, or is held by one of the owner tokens
-- $13, as AdminBatchRelease). Nothing is locked or written.
SELECT count(*)
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
  AND CASE WHEN $11::text = 'retry' THEN state = 'dead' OR ($12::bool AND state = 'needs_operator')
           ELSE state = 'active' AND owner_token IS NOT NULL
                AND (lease_expires_at <= now() OR owner_token = ANY($13::uuid[])) END;

-- name: AdminKeyShow
-- One key, every column. The bodies come as stored (hex; sealed under the
-- data key `data_key_id` when it is set): `keys show` and the console
-- summarize them, and open them only for an audited reveal (key_admin.h).
-- trace_parent last: ShowRow adds the trace id read from it.
SELECT account, idempotency_key, id, stable_id::text, bucket, flow, request_method, request_path,
       encode(request_body, 'hex'),
       encode(request_fingerprint, 'hex'), state::text, recovery_point, owner_token::text,
       locked_at::text, lease_expires_at::text, attempts, next_attempt_at::text, coalesce(last_error, ''),
       outcomes::text, response_status, response_headers::text, encode(response_body, 'hex'),
       created_at::text, updated_at::text, finished_at::text, failures, point_reached_at::text, rearmed_at::text,
       flow_version, data_key_id, erased_at::text, error_class::text, trace_parent
FROM phasekey.idempotency_keys
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2;

-- name: AdminKeyRetry
-- A dead-lettered key goes back to re-drive: its failures are reset and its
-- give-up time counts from now (rearmed_at). The provider's memory still
-- bounds it: its foreign phase's first attempt time is kept, so a phase past
-- its provider's key retention looks up first or parks the key again.
-- $4: also a key parked for an operator, who verified at the provider that
-- nothing took effect; its foreign phase then starts a new provider window.
UPDATE phasekey.idempotency_keys
SET point_reached_at = CASE WHEN state = 'needs_operator' THEN now() ELSE point_reached_at END,
    state = 'active', failures = 0, rearmed_at = now(), next_attempt_at = now(), updated_at = now(),
    last_error = concat_ws(' | ', last_error,
      CASE WHEN state = 'needs_operator' THEN 'verified as not taken effect and put back by an operator'
           ELSE 'put back to re-drive by an operator' END)
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2
  AND (state = 'dead' OR ($4::bool AND state = 'needs_operator'))
RETURNING recovery_point;

-- name: AdminKeyRelease
-- Frees a lease by hand, fenced on the owner token the operator saw.
UPDATE phasekey.idempotency_keys
SET owner_token = NULL, locked_at = NULL, lease_expires_at = NULL, next_attempt_at = now(), updated_at = now(),
    last_error = concat_ws(' | ', last_error, 'lease released by an operator')
WHERE bucket = $3 AND account = $1 AND idempotency_key = $2 AND owner_token = $4::uuid AND state = 'active'
RETURNING recovery_point;

-- name: AdminBatchRetry
-- keys retry --all-matching: AdminKeyRetry on every key the filter ($1-$10)
-- matches, in one statement; $11 as AdminKeyRetry's $4. Returns how many
-- it put back: the caller compares it with the count the operator confirmed
-- and rolls back when they differ. Each row is checked again once locked
-- (READ COMMITTED re-reads a row another transaction changed), so a key
-- that left the filter meanwhile is not touched.
WITH retried AS (
  UPDATE phasekey.idempotency_keys
  SET point_reached_at = CASE WHEN state = 'needs_operator' THEN now() ELSE point_reached_at END,
      state = 'active', failures = 0, rearmed_at = now(), next_attempt_at = now(), updated_at = now(),
      last_error = concat_ws(' | ', last_error,
        CASE WHEN state = 'needs_operator'
             THEN 'verified as not taken effect and put back by an operator (batch)'
             ELSE 'put back to re-drive by an operator (batch)' END)
  WHERE ($1::text IS NULL OR (bucket, account) = ($2::smallint, $1::text))
    AND ($3::text IS NULL OR flow = $3)
    AND ($4::phasekey.key_state IS NULL OR state = $4::phasekey.key_state)
    AND ($5::text IS NULL OR recovery_point = $5)
    AND ($6::phasekey.error_class IS NULL OR error_class = $6::phasekey.error_class)
    AND (NOT $7::bool OR (state = 'active' AND ((owner_token IS NOT NULL AND lease_expires_at <= now())
                                                 OR attempts >= $8)))
    AND created_at <= now() - make_interval(secs => $9::double precision)
    AND ($10::double precision IS NULL OR created_at > now() - make_interval(secs => $10::double precision))
    AND (state = 'dead' OR ($11::bool AND state = 'needs_operator'))
  RETURNING 1
)
SELECT count(*) FROM retried;

-- name: AdminBatchRelease
-- keys release --all-matching: frees the leases of the active keys the
-- filter ($1-$10) matches whose lease has expired, or whose holder is one
-- of the owner tokens $11 the operator named. A live lease of any other
-- holder is never freed: the expiry is checked again on the locked row,
-- against the transaction's start, so a holder that renewed meanwhile keeps
-- its lease. Returns how many it freed (compared as AdminBatchRetry's).
WITH released AS (
  UPDATE phasekey.idempotency_keys
  SET owner_token = NULL, locked_at = NULL, lease_expires_at = NULL, next_attempt_at = now(), updated_at = now(),
      last_error = concat_ws(' | ', last_error, 'lease released by an operator (batch)')
  WHERE ($1::text IS NULL OR (bucket, account) = ($2::smallint, $1::text))
    AND ($3::text IS NULL OR flow = $3)
    AND ($4::phasekey.key_state IS NULL OR state = $4::phasekey.key_state)
    AND ($5::text IS NULL OR recovery_point = $5)
    AND ($6::phasekey.error_class IS NULL OR error_class = $6::phasekey.error_class)
    AND (NOT $7::bool OR (state = 'active' AND ((owner_token IS NOT NULL AND lease_expires_at <= now())
                                                 OR attempts >= $8)))
    AND created_at <= now() - make_interval(secs => $9::double precision)
    AND ($10::double precision IS NULL OR created_at > now() - make_interval(secs => $10::double precision))
    AND state = 'active' AND owner_token IS NOT NULL
    AND (lease_expires_at <= now() OR owner_token = ANY($11::uuid[]))
  RETURNING 1
)
SELECT count(*) FROM released;

-- name: AdminAuditInsert
-- An operator's action (keys retry, keys release, a reveal of a key's
-- bodies, the console's) and its outcome, refusals too; written in the
-- action's own transaction, so an action never commits without its row. A
-- batch action names its filter's account (or '*') and the key '*', its
-- filter and count in the outcome.
INSERT INTO phasekey.operator_audit (actor, action, account, idempotency_key, succeeded, outcome)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: AdminStatsByFlow
SELECT flow, state::text, count(*) FROM phasekey.idempotency_keys GROUP BY flow, state ORDER BY flow, state;

-- name: AdminStatsSummary
SELECT (SELECT min(created_at)::text FROM phasekey.idempotency_keys WHERE state = 'active'),
       (SELECT floor(extract(epoch FROM now() - min(created_at)))::bigint
          FROM phasekey.idempotency_keys WHERE state = 'active'),
       (SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'dead'),
       (SELECT count(*) FROM phasekey.idempotency_keys
         WHERE state = 'active' AND next_attempt_at <= now()
           AND (lease_expires_at IS NULL OR lease_expires_at <= now())),
       (SELECT count(*) FROM phasekey.staged_jobs);

-- name: AdminReapPreview
-- phasekey reap --dry-run: what a sweep with these retentions would delete
-- and keep, by the reaper's rules (sql/queries/reaper.sql). $1 the finished
-- keys' retention, $2 the dead keys' (0: kept forever), $3 the parked keys'
-- (0: kept until an operator resolves them), in seconds. Dead and parked
-- keys age from updated_at (the time they were stopped); kept_dead counts
-- the dead keys created longer ago than $1 that the sweep would keep.
SELECT count(*) FILTER (WHERE state = 'finished'
                          AND finished_at < now() - make_interval(secs => $1::double precision)),
       min(finished_at) FILTER (WHERE state = 'finished'
                          AND finished_at < now() - make_interval(secs => $1::double precision))::text,
       count(*) FILTER (WHERE state = 'active' AND created_at < now() - make_interval(secs => $1::double precision)),
       count(*) FILTER (WHERE state = 'dead' AND created_at < now() - make_interval(secs => $1::double precision)
                          AND NOT ($2::double precision > 0
                                   AND updated_at < now() - make_interval(secs => $2::double precision))),
       count(*) FILTER (WHERE state = 'dead' AND $2::double precision > 0
                          AND updated_at < now() - make_interval(secs => $2::double precision)),
       count(*) FILTER (WHERE state = 'needs_operator' AND $3::double precision > 0
                          AND updated_at < now() - make_interval(secs => $3::double precision))
FROM phasekey.idempotency_keys;

-- name: AdminSuspectedRegenerations
-- phasekey stats: the keys that repeat an earlier key's request within
-- their flow's window ($3: a JSON object of flows with their own windows,
-- in seconds; the others $1), in every bucket, newest first, at most $2,
-- with the count per flow over all of them. The rule is
-- phasekey.key_regeneration_pairs (sql/migrations/0001_baseline.sql), the one the reaper's
-- counter applies (KeyAuditRegenerations), so a pair listed here is one the
-- counter counts.
WITH pairs AS (
  SELECT DISTINCT ON (p.later_id) p.flow, p.account, p.earlier_key, p.later_key, p.later_created_at, p.apart_s
  FROM phasekey.key_regeneration_pairs($3::jsonb, $1::float8) p
  ORDER BY p.later_id, p.earlier_id DESC
)
SELECT flow, account, earlier_key, later_key, round(apart_s::numeric, 1)::text, count(*) OVER (PARTITION BY flow)
FROM pairs
ORDER BY later_created_at DESC
LIMIT $2;
