-- Named queries of engine/src/pg/deployment.cc: the deployment's fixed
-- settings, one row for the whole database (not per bucket: read once when a
-- process opens, never on a request's path).

-- name: DeploymentRecordBuckets
-- The first process to ask records its bucket count; later ones read it.
INSERT INTO phasekey.deployment (buckets) VALUES ($1)
ON CONFLICT (singleton) DO NOTHING;

-- name: DeploymentBuckets
SELECT buckets FROM phasekey.deployment;
