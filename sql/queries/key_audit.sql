-- Named queries of engine/src/workers/key_audit.cc: the audit for clients
-- that regenerate their key on a retry (docs/clients.md, mistake 1), run by
-- the reaper on one bucket at a time. Read-only: nothing is written for it,
-- on the request path or anywhere else.

-- name: KeyAuditRegenerations
-- The keys of bucket $1 that repeat an earlier key's request within their
-- flow's window ($2: a JSON object of flows with their own windows, in
-- seconds; the others $3): one row per later key, paired with the latest
-- earlier one. The rule is phasekey.key_regeneration_pairs (migration
-- 0010), which `phasekey stats` applies too.
SELECT DISTINCT ON (p.later_id)
       p.flow, p.account, p.later_id, p.later_key, p.earlier_id, p.earlier_key, p.apart_s
FROM phasekey.key_regeneration_pairs($2::jsonb, $3::float8) p
WHERE p.bucket = $1
ORDER BY p.later_id, p.earlier_id DESC;
