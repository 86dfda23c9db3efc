-- The transactional outbox: an atomic phase stages a job in the same
-- transaction as its other writes; the enqueuer hands staged jobs to a job
-- sink and deletes them only after the sink accepted them.
CREATE TABLE phasekey.staged_jobs (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_name   text        NOT NULL CHECK (char_length(job_name) BETWEEN 1 AND 100),
  job_args   jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
