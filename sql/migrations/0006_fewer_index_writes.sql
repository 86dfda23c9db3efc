-- Fewer index writes per request (docs/benchmarks.md, issue 16):
--
-- 1. No index on stable_id. No query looks a key up by it: provider keys are
--    derived from it and it is random (gen_random_uuid, 122 random bits), so
--    a unique index only cost one more entry for every row version the
--    claim and the finish write.
-- 2. Room on each page for the key's later versions (fillfactor 80): the
--    fenced move and the lease renewals change no indexed column, so with
--    free space on the page they are HOT updates (no index entries at all).
--    The finish changes `state`, which the partial indexes read, and stays a
--    regular update.
DROP INDEX phasekey.idempotency_keys_stable_id;
ALTER TABLE phasekey.idempotency_keys SET (fillfactor = 80);

-- One reading of the key row for the claim path, so that KeyClaim, KeyGet
-- and KeyGetForUpdate (sql/queries/key_store.sql) say it once: the row with
-- what the runner decides on computed by the database clock (a live lease,
-- the seconds until the lease ends or the next attempt is due, the key's age
-- from its creation or an operator's retry, the time at its recovery point).
-- A plain view: PostgreSQL inlines it, and FOR UPDATE through it locks the
-- key row.
CREATE VIEW phasekey.key_rows AS
SELECT id, stable_id::text AS stable_id, flow, request_method, request_path,
       encode(request_fingerprint, 'hex') AS fingerprint, state::text AS state, recovery_point,
       owner_token::text AS owner_token,
       (lease_expires_at IS NOT NULL AND lease_expires_at > now()) AS leased,
       greatest(1, ceil(extract(epoch FROM coalesce(lease_expires_at, next_attempt_at) - now())))::int
         AS retry_after_s,
       attempts, failures, response_status, response_headers::text AS response_headers,
       encode(response_body, 'hex') AS response_body, outcomes::text AS outcomes, request_body,
       floor(extract(epoch FROM now() - coalesce(rearmed_at, created_at)))::bigint AS age_s,
       floor(extract(epoch FROM now() - point_reached_at))::bigint AS point_age_s,
       coalesce(last_error, '') AS last_error,
       bucket, account, idempotency_key
FROM phasekey.idempotency_keys;
