-- Named queries of engine/src/workers/key_audit.cc: the audit for clients
-- that regenerate their key on a retry (docs/clients.md, mistake 1), run by
-- the reaper on one bucket at a time. Nothing is written for it on the
-- request path: it records the keys it counted in its own table.

-- name: KeyAuditCountNew
-- The keys of bucket $1 that repeat an earlier key's request within their
-- flow's window ($2: a JSON object of flows with their own windows, in
-- seconds; the others $3), each paired with the latest earlier one, that no
-- audit has counted yet: they are recorded in phasekey.key_audit_counted in
-- the same statement, so a concurrent reaper's insert of the same key waits
-- for this one and then finds it there. The rule is
-- phasekey.key_regeneration_pairs, which `phasekey stats` applies too.
-- Each with the two keys' stored traceparents, for the audit's log line.
WITH pairs AS (
  SELECT DISTINCT ON (p.later_id)
         p.flow, p.account, p.later_id, p.later_key, p.earlier_id, p.earlier_key, p.apart_s
  FROM phasekey.key_regeneration_pairs($2::jsonb, $3::float8) p
  WHERE p.bucket = $1
  ORDER BY p.later_id, p.earlier_id DESC
), fresh AS (
  INSERT INTO phasekey.key_audit_counted (bucket, key_id)
  SELECT $1, later_id FROM pairs
  ON CONFLICT (bucket, key_id) DO NOTHING
  RETURNING key_id
)
SELECT pairs.flow, pairs.account, pairs.later_id, pairs.later_key, pairs.earlier_id, pairs.earlier_key, pairs.apart_s,
       later.trace_parent, earlier.trace_parent
FROM pairs JOIN fresh ON fresh.key_id = pairs.later_id
LEFT JOIN phasekey.idempotency_keys later
  ON later.bucket = $1 AND later.account = pairs.account AND later.idempotency_key = pairs.later_key
LEFT JOIN phasekey.idempotency_keys earlier
  ON earlier.bucket = $1 AND earlier.account = pairs.account AND earlier.idempotency_key = pairs.earlier_key
ORDER BY pairs.later_id;

-- name: KeyAuditForget
-- Forgets the counted keys of bucket $1 counted more than $2 seconds ago
-- (the widest window): a key counted then was created before, so it is out
-- of every window and can form no pair again.
DELETE FROM phasekey.key_audit_counted
WHERE bucket = $1 AND counted_at < now() - make_interval(secs => $2::float8);
