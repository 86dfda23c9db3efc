-- Named queries of engine/src/workers/enqueuer.cc.

-- name: EnqueuerTakeBatch
-- Locks and deletes a batch; the caller hands it to the sink before COMMIT,
-- so a job is deleted only if it was handed on. SKIP LOCKED lets any number
-- of enqueuers share the table; each row is returned by exactly one.
-- One bucket (one shard) per batch; the bucket is in both WHERE clauses.
DELETE FROM phasekey.staged_jobs
WHERE bucket = $1 AND id IN (SELECT id FROM phasekey.staged_jobs
                             WHERE bucket = $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING id, job_name, job_args::text, created_at::text;
