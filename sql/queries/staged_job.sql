-- Named queries of engine/src/workers/staged_job.cc.

-- name: StagedJobInsert
-- In the bucket of the key whose phase stages it, so the job lives on the
-- key's shard and the phase's transaction stays on one.
INSERT INTO phasekey.staged_jobs (bucket, job_name, job_args) VALUES ($3, $1, $2::jsonb) RETURNING id;
