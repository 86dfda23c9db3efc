-- Named queries of engine/src/workers/staged_job.cc.

-- name: StagedJobInsert
INSERT INTO phasekey.staged_jobs (job_name, job_args) VALUES ($1, $2::jsonb) RETURNING id;
