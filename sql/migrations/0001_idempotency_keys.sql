-- The idempotency key row: one per (account, key), recorded before any work
-- is done, carrying the request (for re-drive), its fingerprint, the
-- recovery point reached, the lease, the retry bookkeeping and the stored
-- response. Every timestamp comes from the database clock.

CREATE TYPE phasekey.key_state AS ENUM (
  'active',    -- not finished; runs when it holds a lease, waits otherwise
  'finished',  -- the response is stored and is all any retry will get
  'dead'       -- gave up (attempt cap or horizon); kept for the operator
);

CREATE TABLE phasekey.idempotency_keys (
  id                  bigint GENERATED ALWAYS AS IDENTITY,
  account             text        NOT NULL CHECK (char_length(account) BETWEEN 1 AND 200),
  idempotency_key     text        NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  -- Random and stable: provider keys are derived from it (never from id,
  -- which repeats across databases).
  stable_id           uuid        NOT NULL DEFAULT gen_random_uuid(),
  -- The distribution column: a hash of the account (FNV-1a, see
  -- docs/protocol.md). Every query filters on it, so on a distributed
  -- Postgres (distributed by bucket) each one stays within one shard, and the
  -- re-drive worker polls one bucket at a time.
  bucket              smallint    NOT NULL CHECK (bucket >= 0),
  flow                text        NOT NULL CHECK (char_length(flow) BETWEEN 1 AND 100),
  request_method      text        NOT NULL CHECK (char_length(request_method) BETWEEN 1 AND 16),
  request_path        text        NOT NULL CHECK (char_length(request_path) BETWEEN 1 AND 2000),
  request_body        text        NOT NULL,  -- RFC 8785 canonical form
  request_fingerprint bytea       NOT NULL CHECK (octet_length(request_fingerprint) = 32),
  state               phasekey.key_state NOT NULL DEFAULT 'active',
  recovery_point      text        NOT NULL CHECK (recovery_point ~ '^[a-z][a-z0-9_]{0,62}$'),
  owner_token         uuid,
  locked_at           timestamptz,
  lease_expires_at    timestamptz,
  attempts            integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at     timestamptz NOT NULL DEFAULT now(),
  last_error          text,
  -- Outcomes of foreign phases, by the recovery point they led to, recorded
  -- in the transaction after the call: {"charge_created": {"charge_id": ...}}.
  outcomes            jsonb       NOT NULL DEFAULT '{}'::jsonb,
  response_status     integer     CHECK (response_status BETWEEN 100 AND 599),
  response_headers    jsonb,
  response_body       bytea,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  finished_at         timestamptz,
  PRIMARY KEY (bucket, account, id),
  CONSTRAINT idempotency_keys_account_key UNIQUE (bucket, account, idempotency_key),
  CONSTRAINT finished_has_response
    CHECK ((state = 'finished') = (response_status IS NOT NULL AND finished_at IS NOT NULL)),
  CONSTRAINT finished_at_finished
    CHECK ((state = 'finished') = (recovery_point = 'finished')),
  CONSTRAINT lease_is_whole
    CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL)
           AND (owner_token IS NULL) = (locked_at IS NULL)),
  CONSTRAINT done_is_unleased
    CHECK (state = 'active' OR owner_token IS NULL)
);

CREATE UNIQUE INDEX idempotency_keys_stable_id ON phasekey.idempotency_keys (bucket, stable_id);

-- What the re-drive worker polls: unfinished keys per bucket by due time.
CREATE INDEX idempotency_keys_redrive
  ON phasekey.idempotency_keys (bucket, next_attempt_at)
  WHERE state = 'active';

-- What the reaper scans: finished keys by age.
CREATE INDEX idempotency_keys_reap
  ON phasekey.idempotency_keys (bucket, finished_at)
  WHERE state = 'finished';
