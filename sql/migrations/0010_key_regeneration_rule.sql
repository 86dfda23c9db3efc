-- The rule of the key-regeneration audit (issue 19; docs/clients.md,
-- mistake 1) in one place, for its two readers: the reaper's counter
-- (KeyAuditRegenerations, sql/queries/key_audit.sql) and `phasekey stats`
-- (AdminSuspectedRegenerations, sql/queries/key_admin.sql). Before, each
-- query wrote the pairing out, and stats applied one window to every flow,
-- so it could list a pair the counter, with the flow's own window, did not
-- count.
--
-- A pair is a later key that repeats an earlier key's request: the same
-- bucket and account, flow, method, path and request fingerprint, an
-- earlier id, created at most the flow's window before it, the later key
-- itself created within that window of now. Only keys the request path's
-- own indexes find are read: the active ones and those finished within the
-- window (a key already dead or parked for an operator is not seen).
--
-- The window of a flow: `windows` ({"flow": seconds}) names the flows with
-- their own; the others have `default_window_s`.
CREATE FUNCTION phasekey.regeneration_window_s(flow text, windows jsonb, default_window_s float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce((windows ->> flow)::float8, default_window_s) $$;

-- Every pair, one row per (later, earlier) key: a reader keeps the latest
-- earlier key of each later one (DISTINCT ON later_id ORDER BY earlier_id
-- DESC) and filters on `bucket` to stay on one shard. A plain SQL function
-- (not STRICT, STABLE, one SELECT), so PostgreSQL inlines it into the
-- reader's query: the reader's bucket filter reaches both keys' index scans
-- (the pair shares its bucket), and the widest window bounds those scans.
CREATE FUNCTION phasekey.key_regeneration_pairs(windows jsonb, default_window_s float8)
RETURNS TABLE (bucket smallint, flow text, account text, later_id bigint, later_key text,
               later_created_at timestamptz, earlier_id bigint, earlier_key text, apart_s float8)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT later.bucket, later.flow, later.account, later.id, later.idempotency_key, later.created_at,
         earlier.id, earlier.idempotency_key,
         extract(epoch FROM later.created_at - earlier.created_at)::float8
  FROM phasekey.idempotency_keys later
  JOIN phasekey.idempotency_keys earlier
    ON earlier.bucket = later.bucket AND earlier.account = later.account AND earlier.flow = later.flow
   AND earlier.request_method = later.request_method AND earlier.request_path = later.request_path
   AND earlier.request_fingerprint = later.request_fingerprint
   AND earlier.id < later.id
  CROSS JOIN LATERAL (
    SELECT phasekey.regeneration_window_s(later.flow, windows, default_window_s) AS s,
           greatest(default_window_s, (SELECT max(w.value::float8) FROM jsonb_each_text(windows) w)) AS widest
  ) win
  WHERE later.created_at - earlier.created_at <= make_interval(secs => win.s)
    AND later.created_at > now() - make_interval(secs => win.s)
    -- The widest window bounds both keys' index scans; the flow's own
    -- window decides.
    AND later.created_at > now() - make_interval(secs => win.widest)
    AND earlier.created_at > now() - make_interval(secs => win.widest)
    AND (later.state = 'active'
         OR (later.state = 'finished' AND later.finished_at > now() - make_interval(secs => win.widest)))
    AND (earlier.state = 'active'
         OR (earlier.state = 'finished' AND earlier.finished_at > now() - make_interval(secs => win.widest)))
$$;
