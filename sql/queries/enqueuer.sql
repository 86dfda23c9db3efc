-- Named queries of engine/src/workers/enqueuer.cc.

-- name: EnqueuerTakeBatch
-- Locks and deletes a batch; the caller hands it to the sink before COMMIT,
-- so a job is deleted only if it was handed on. SKIP LOCKED lets any number
-- of enqueuers share the table; each row is returned by exactly one.
DELETE FROM phasekey.staged_jobs
WHERE id IN (SELECT id FROM phasekey.staged_jobs ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
RETURNING id, job_name, job_args::text, created_at::text;
