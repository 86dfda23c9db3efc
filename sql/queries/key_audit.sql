-- Named queries of engine/src/workers/key_audit.cc: the audit for clients
-- that regenerate their key on a retry (docs/clients.md, mistake 1), run by
-- the reaper on one bucket at a time. Read-only: nothing is written for it,
-- on the request path or anywhere else.

-- name: KeyAuditRegenerations
-- The keys of bucket $1 that repeat an earlier key's account, flow, method,
-- path and request fingerprint within the flow's window ($2: a JSON object
-- of flows with their own windows, in seconds; the others $3): one row per
-- later key, paired with the latest earlier one. Only keys the request path's own
-- indexes find are read: the active ones (idempotency_keys_redrive) and those
-- finished within the widest window (idempotency_keys_reap); a key already
-- dead or parked for an operator is not seen.
WITH windows AS (
  SELECT greatest($3::float8, (SELECT max(w.value::float8) FROM jsonb_each_text($2::jsonb) w)) AS widest
), recent AS (
  SELECT k.id, k.account, k.flow, k.request_method, k.request_path, k.request_fingerprint,
         k.idempotency_key, k.created_at, coalesce(($2::jsonb ->> k.flow)::float8, $3::float8) AS window_s
  FROM phasekey.idempotency_keys k
  CROSS JOIN windows
  WHERE k.bucket = $1
    AND (k.state = 'active'
         OR (k.state = 'finished' AND k.finished_at > now() - make_interval(secs => windows.widest)))
    AND k.created_at > now() - make_interval(secs => windows.widest)
)
SELECT DISTINCT ON (later.id)
       later.flow, later.account, later.id, later.idempotency_key, earlier.id, earlier.idempotency_key,
       extract(epoch FROM later.created_at - earlier.created_at)::float8 AS apart_s
FROM recent later
JOIN recent earlier
  ON earlier.account = later.account AND earlier.flow = later.flow
 AND earlier.request_method = later.request_method AND earlier.request_path = later.request_path
 AND earlier.request_fingerprint = later.request_fingerprint
 AND earlier.id < later.id
 AND later.created_at - earlier.created_at <= make_interval(secs => later.window_s)
 AND later.created_at > now() - make_interval(secs => later.window_s)
ORDER BY later.id, earlier.id DESC;
