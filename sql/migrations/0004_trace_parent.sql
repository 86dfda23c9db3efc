-- The W3C Trace Context traceparent of the request that created the key
-- (Request::traceparent, docs/operations.md "A request's life by its trace
-- id"), so that every log line about the key, a re-drive's included, carries
-- the trace id of the request it belongs to. Written once, by the claim that
-- inserts the row, in its version-00 form ("00-<trace id>-<parent id>-<flags>",
-- 55 characters); NULL when the request had none (or an invalid one) and on
-- keys claimed by binaries of schema 0003 and older. A later request with the
-- same key never changes it: the key's life is its first request's trace.
ALTER TABLE phasekey.idempotency_keys ADD COLUMN trace_parent text;

COMMENT ON COLUMN phasekey.idempotency_keys.trace_parent IS
  'The W3C traceparent of the request that created the key, version-00 form; NULL: none. Never changed.';

-- phasekey.key_rows with the trace parent as its last column: the one
-- reading of a key row the claim path of this schema's binaries uses
-- (sql/queries/key_store.sql). key_rows itself keeps its shape: the claim
-- statements of binaries of schema 0003 and older read all its columns
-- (k.*) beside a fixed list of as many, so a column added to it would break
-- them during a rolling deploy (docs/upgrading.md). A later migration drops
-- key_rows once no such binary runs.
CREATE VIEW phasekey.key_rows_v2 AS
SELECT id, stable_id::text AS stable_id, flow, request_method, request_path,
       encode(request_fingerprint, 'hex') AS fingerprint, state::text AS state, recovery_point,
       owner_token::text AS owner_token,
       (lease_expires_at IS NOT NULL AND lease_expires_at > now()) AS leased,
       greatest(1, ceil(extract(epoch FROM coalesce(lease_expires_at, next_attempt_at) - now())))::int
         AS retry_after_s,
       attempts, failures, response_status, response_headers::text AS response_headers,
       encode(response_body, 'hex') AS response_body, outcomes::text AS outcomes,
       encode(request_body, 'hex') AS request_body,
       floor(extract(epoch FROM now() - coalesce(rearmed_at, created_at)))::bigint AS age_s,
       floor(extract(epoch FROM now() - point_reached_at))::bigint AS point_age_s,
       coalesce(last_error, '') AS last_error,
       bucket, account, idempotency_key,
       data_key_id, erased_at IS NOT NULL AS erased,
       trace_parent
FROM phasekey.idempotency_keys;

COMMENT ON VIEW phasekey.key_rows_v2 IS
  'phasekey.key_rows plus trace_parent: the key row as the claim path of schema 0004 reads it.';
