-- Named queries of engine/src/flow/deploy_gate.cc: the deploy gate
-- (phasekey/deploy_gate.h, `phasekey flows check`).

-- name: DeployGateStrandedKeys
-- The active keys of the flows named in $1, a JSON object {flow: [every
-- point the flow knows]}, at a recovery point their flow does not list:
-- per flow and point, how many, and how long the longest-waiting of them has
-- been there (whole seconds). Keys of flows not in $1, and keys that are not
-- active (finished, dead, needs_operator), are not counted. Spans every
-- bucket: an operator check before a deploy, not on a request's path.
SELECT flow, recovery_point, count(*),
       floor(extract(epoch FROM now() - min(point_reached_at)))::bigint
FROM phasekey.idempotency_keys
WHERE state = 'active'
  AND $1::jsonb ? flow
  AND NOT (($1::jsonb -> flow) @> to_jsonb(recovery_point))
GROUP BY flow, recovery_point
ORDER BY flow COLLATE "C", recovery_point COLLATE "C";
