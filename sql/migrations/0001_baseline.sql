-- The engine's schema (component "phasekey"), as it is: one baseline made
-- before the first release from the twelve migrations written while the
-- schema was being designed (none of them was ever released, so no database
-- needs them). Migrations after this one are the upgrade history.
--
-- The migrator creates the schema `phasekey` and its own bookkeeping table
-- (phasekey.schema_migrations) before it applies any migration
-- (sql/queries/migrator.sql).
--
-- Conventions of every table here:
-- - Every timestamp comes from the database clock (now()), never a
--   process's.
-- - `bucket` is the distribution column: a hash of the account (FNV-1a,
--   docs/protocol.md) for key rows and data keys, and the bucket a staged
--   job or an inbox event belongs to. It leads every primary key and every
--   index of a bucketed table, and every statement filters on it, so on a
--   distributed PostgreSQL (distributed by bucket) each one stays on one
--   shard, and the re-drive worker polls one bucket at a time. The bucket
--   count is the deployment's (phasekey.deployment).
-- - Limits on single columns of the key row (lengths of account, key,
--   method, path and flow; the recovery point's form; the response status
--   range) are checked by the engine before any statement, not by CHECK
--   constraints: PostgreSQL deserializes and plans every CHECK of a table
--   again for each statement that writes a row of it, and on the key row,
--   written three times per request, that cost about an eighth of a ride's
--   server time (docs/benchmarks.md). Only the constraints that tie columns
--   together, the state machine, stay in the database, against any writer.
--   The other tables, written rarely, keep their limits as CHECKs.


-- ---------------------------------------------------------------------------
-- phasekey.deployment: the deployment's fixed settings, exactly one row.
--
-- The bucket count is written by the first `phasekey migrate --buckets` or
-- Runner::Open (16 when none is given) and read by every process; a process
-- configured with another count refuses to start (DeploymentBuckets,
-- phasekey/migrate.h).
-- ---------------------------------------------------------------------------
CREATE TABLE phasekey.deployment (
  singleton  boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  buckets    smallint    NOT NULL CHECK (buckets BETWEEN 1 AND 32767),
  created_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE phasekey.deployment IS
  'The deployment''s fixed settings (one row): the bucket count every process reads.';


-- ---------------------------------------------------------------------------
-- phasekey.idempotency_keys: the key row, one per (account, idempotency key).
--
-- Recorded before any work is done, it carries the request (for re-drive),
-- its fingerprint, the recovery point reached, the lease, the retry
-- bookkeeping, the outcomes of foreign phases and the stored response.
--
-- Invariants (the CHECK constraints below):
-- - finished_has_response, finished_at_finished: a key is 'finished' exactly
--   when it has its response status and finish time, and exactly when it
--   sits at the recovery point 'finished'.
-- - lease_is_whole: owner_token, locked_at and lease_expires_at are set or
--   NULL together.
-- - done_is_unleased: only an active key is leased.
-- Every write of a leased key is fenced on (owner_token, the lease not
-- expired): a writer that lost its lease matches no row (fence_held below).
--
-- Storage: fillfactor 80 leaves room on each page for the row's later
-- versions, so the fenced moves and lease renewals, which change no indexed
-- column, are HOT updates (no index entries). The finish changes `state`,
-- which the partial indexes read, and is a regular update.
-- ---------------------------------------------------------------------------
CREATE TYPE phasekey.key_state AS ENUM (
  'active',         -- not finished; runs when it holds a lease, waits otherwise
  'finished',       -- the response is stored and is all any retry will get
  'dead',           -- given up (docs/protocol.md, "Giving up"); kept for the operator
  'needs_operator'  -- its provider may have forgotten the key and its phase cannot
                    -- look the operation up: parked for a person instead of re-sending
);

CREATE TABLE phasekey.idempotency_keys (
  -- For logs and operators only; unique by its identity, and no statement
  -- looks a row up by it (the primary key is the client's key).
  id                  bigint      GENERATED ALWAYS AS IDENTITY,
  account             text        NOT NULL,
  idempotency_key     text        NOT NULL,
  -- Random and stable: provider keys are derived from it (never from id,
  -- which repeats across databases). Not indexed: nothing looks it up.
  stable_id           uuid        NOT NULL DEFAULT gen_random_uuid(),
  bucket              smallint    NOT NULL,
  flow                text        NOT NULL,
  request_method      text        NOT NULL,
  request_path        text        NOT NULL,
  -- The request as RFC 8785 canonical JSON, sealed when data_key_id is set.
  -- NULL once the key finishes (the fingerprint remains, for the 422 of a
  -- reused key) or once its account is erased.
  request_body        bytea,
  -- SHA-256 of the canonical request, never sealed: a reused key is told
  -- from its first use without decrypting anything.
  request_fingerprint bytea       NOT NULL,
  state               phasekey.key_state NOT NULL DEFAULT 'active',
  recovery_point      text        NOT NULL,
  -- The lease (lease_is_whole).
  owner_token         uuid,
  locked_at           timestamptz,
  lease_expires_at    timestamptz,
  -- The number of claims, a client's take-over included. Not capped: time
  -- decides when a key is given up.
  attempts            integer     NOT NULL DEFAULT 0,
  next_attempt_at     timestamptz NOT NULL DEFAULT now(),
  last_error          text,
  -- Outcomes of foreign phases, by the recovery point they led to, recorded
  -- in the transaction after the call: {"charge_created": {"charge_id": ...}}.
  -- The values are sealed when data_key_id is set.
  outcomes            jsonb       NOT NULL DEFAULT '{}'::jsonb,
  response_status     integer,
  response_headers    jsonb,
  response_body       bytea,      -- sealed when data_key_id is set
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  finished_at         timestamptz,
  -- Failures the engine could not classify (bugs): the only capped count.
  failures            integer     NOT NULL DEFAULT 0,
  -- When the key arrived at its recovery point: the phase owning that point
  -- was first attempted at or after it, so now() - point_reached_at never
  -- understates how long ago a provider first saw the phase's key.
  point_reached_at    timestamptz NOT NULL DEFAULT now(),
  -- When an operator last put the key back (`phasekey keys retry`); the
  -- give-up time counts from it instead of created_at.
  rearmed_at          timestamptz,
  -- The version of the flow's graph the key was claimed under
  -- (Flow::version(): the first 16 hex digits of the SHA-256 of its shape;
  -- docs/upgrading.md, "Changing a flow").
  flow_version        text,
  -- The account's data key (phasekey.data_keys.id) the bodies and outcome
  -- values are sealed under; NULL: stored as they are (encryption off).
  data_key_id         bigint,
  -- Set when the account was erased: its bodies are gone or unreadable.
  erased_at           timestamptz,
  -- Every statement finds a key row by the client's key, the distribution
  -- column first.
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (bucket, account, idempotency_key),
  CONSTRAINT finished_has_response
    CHECK ((state = 'finished') = (response_status IS NOT NULL AND finished_at IS NOT NULL)),
  CONSTRAINT finished_at_finished
    CHECK ((state = 'finished') = (recovery_point = 'finished')),
  CONSTRAINT lease_is_whole
    CHECK ((owner_token IS NULL) = (lease_expires_at IS NULL)
           AND (owner_token IS NULL) = (locked_at IS NULL)),
  CONSTRAINT done_is_unleased
    CHECK (state = 'active' OR owner_token IS NULL)
) WITH (fillfactor = 80);

-- The indexes are partial, so a key enters each only in the state its
-- reader looks for, and `state` is the only indexed column a request's
-- updates change.

-- What the re-drive worker polls: unfinished keys per bucket by due time.
CREATE INDEX idempotency_keys_redrive
  ON phasekey.idempotency_keys (bucket, next_attempt_at)
  WHERE state = 'active';

-- What the reaper scans: finished keys by age.
CREATE INDEX idempotency_keys_reap
  ON phasekey.idempotency_keys (bucket, finished_at)
  WHERE state = 'finished';

-- The operator console's keys table filtered to dead or parked keys, in
-- primary-key order (sql/queries/console_queries.sql, ConsoleKeysPage). The
-- request path never writes it: a key enters it only when it is given up or
-- parked.
CREATE INDEX idempotency_keys_attention
  ON phasekey.idempotency_keys (bucket, account, idempotency_key)
  WHERE state IN ('dead', 'needs_operator');

COMMENT ON TABLE phasekey.idempotency_keys IS
  'One row per (account, idempotency key): the request, its recovery point, lease, retry bookkeeping, '
  'foreign outcomes and stored response (docs/protocol.md).';
COMMENT ON COLUMN phasekey.idempotency_keys.point_reached_at IS
  'When the key arrived at its recovery point: never later than the first attempt of the phase owning it.';
COMMENT ON COLUMN phasekey.idempotency_keys.data_key_id IS
  'The data key (phasekey.data_keys.id) the bodies and outcome values are sealed under; NULL: stored as they are.';

-- One reading of the key row for the claim path, so that KeyClaim, KeyGet
-- and KeyGetForUpdate (sql/queries/key_store.sql) say it once: the row with
-- what the runner decides on computed by the database clock (a live lease,
-- the seconds until the lease ends or the next attempt is due, the key's age
-- from its creation or an operator's retry, the time at its recovery point),
-- bodies as hex. A plain view: PostgreSQL inlines it, and FOR UPDATE through
-- it locks the key row.
CREATE VIEW phasekey.key_rows AS
SELECT id, stable_id::text AS stable_id, flow, request_method, request_path,
       encode(request_fingerprint, 'hex') AS fingerprint, state::text AS state, recovery_point,
       owner_token::text AS owner_token,
       (lease_expires_at IS NOT NULL AND lease_expires_at > now()) AS leased,
       greatest(1, ceil(extract(epoch FROM coalesce(lease_expires_at, next_attempt_at) - now())))::int
         AS retry_after_s,
       attempts, failures, response_status, response_headers::text AS response_headers,
       encode(response_body, 'hex') AS response_body, outcomes::text AS outcomes,
       encode(request_body, 'hex') AS request_body,
       floor(extract(epoch FROM now() - coalesce(rearmed_at, created_at)))::bigint AS age_s,
       floor(extract(epoch FROM now() - point_reached_at))::bigint AS point_age_s,
       coalesce(last_error, '') AS last_error,
       bucket, account, idempotency_key,
       data_key_id, erased_at IS NOT NULL AS erased
FROM phasekey.idempotency_keys;

COMMENT ON VIEW phasekey.key_rows IS
  'The key row as the claim path reads it, with its lease, retry and ages computed by the database clock.';

-- Fenced writes that travel with COMMIT: the engine sends the fenced move or
-- finish of a transaction in the same simple-protocol query as its COMMIT
-- ("EXECUTE ...; COMMIT"), which saves a round trip, but then it cannot read
-- the statement's row count before committing. The statement passes its
-- count here instead, and a count other than one raises SQLSTATE PK001:
-- PostgreSQL stops the query at the error, so COMMIT never runs and the
-- engine sees a lost lease (pg/transaction.h, pg/db_failure.cc).
CREATE FUNCTION phasekey.fence_held(matched bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF matched <> 1 THEN
    RAISE EXCEPTION 'phasekey: the fenced statement matched % rows: the lease was lost', matched
      USING ERRCODE = 'PK001';
  END IF;
END
$$;

COMMENT ON FUNCTION phasekey.fence_held(bigint) IS
  'Raises SQLSTATE PK001 unless a fenced statement matched exactly one row (the lease was lost).';

-- The rule of the key-regeneration audit (docs/clients.md, mistake 1) in one
-- place, for its two readers: the reaper's counter (KeyAuditRegenerations,
-- sql/queries/key_audit.sql) and `phasekey stats`
-- (AdminSuspectedRegenerations, sql/queries/key_admin.sql).
--
-- A pair is a later key that repeats an earlier key's request: the same
-- bucket and account, flow, method, path and request fingerprint, an
-- earlier id, created at most the flow's window before it, the later key
-- itself created within that window of now. Only keys the request path's
-- own indexes find are read: the active ones and those finished within the
-- window (a key already dead or parked for an operator is not seen).
--
-- The window of a flow: `windows` ({"flow": seconds}) names the flows with
-- their own; the others have `default_window_s`.
CREATE FUNCTION phasekey.regeneration_window_s(flow text, windows jsonb, default_window_s float8)
RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT coalesce((windows ->> flow)::float8, default_window_s) $$;

-- Every pair, one row per (later, earlier) key: a reader keeps the latest
-- earlier key of each later one (DISTINCT ON later_id ORDER BY earlier_id
-- DESC) and filters on `bucket` to stay on one shard. A plain SQL function
-- (not STRICT, STABLE, one SELECT), so PostgreSQL inlines it into the
-- reader's query: the reader's bucket filter reaches both keys' index scans
-- (the pair shares its bucket), and the widest window bounds those scans.
CREATE FUNCTION phasekey.key_regeneration_pairs(windows jsonb, default_window_s float8)
RETURNS TABLE (bucket smallint, flow text, account text, later_id bigint, later_key text,
               later_created_at timestamptz, earlier_id bigint, earlier_key text, apart_s float8)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
  SELECT later.bucket, later.flow, later.account, later.id, later.idempotency_key, later.created_at,
         earlier.id, earlier.idempotency_key,
         extract(epoch FROM later.created_at - earlier.created_at)::float8
  FROM phasekey.idempotency_keys later
  JOIN phasekey.idempotency_keys earlier
    ON earlier.bucket = later.bucket AND earlier.account = later.account AND earlier.flow = later.flow
   AND earlier.request_method = later.request_method AND earlier.request_path = later.request_path
   AND earlier.request_fingerprint = later.request_fingerprint
   AND earlier.id < later.id
  CROSS JOIN LATERAL (
    SELECT phasekey.regeneration_window_s(later.flow, windows, default_window_s) AS s,
           greatest(default_window_s, (SELECT max(w.value::float8) FROM jsonb_each_text(windows) w)) AS widest
  ) win
  WHERE later.created_at - earlier.created_at <= make_interval(secs => win.s)
    AND later.created_at > now() - make_interval(secs => win.s)
    -- The widest window bounds both keys' index scans; the flow's own
    -- window decides.
    AND later.created_at > now() - make_interval(secs => win.widest)
    AND earlier.created_at > now() - make_interval(secs => win.widest)
    AND (later.state = 'active'
         OR (later.state = 'finished' AND later.finished_at > now() - make_interval(secs => win.widest)))
    AND (earlier.state = 'active'
         OR (earlier.state = 'finished' AND earlier.finished_at > now() - make_interval(secs => win.widest)))
$$;


-- ---------------------------------------------------------------------------
-- phasekey.staged_jobs: the transactional outbox.
--
-- An atomic phase stages a job in the same transaction as its other writes;
-- the enqueuer hands staged jobs to a job sink and deletes them only after
-- the sink accepted them. The bucket is the staging key's. (bucket comes
-- last only because it was added last; its default 0 is for writers that
-- leave it out, such as tests: the engine's statement always passes it.)
-- ---------------------------------------------------------------------------
CREATE TABLE phasekey.staged_jobs (
  id         bigint      GENERATED ALWAYS AS IDENTITY,
  job_name   text        NOT NULL CHECK (char_length(job_name) BETWEEN 1 AND 100),
  job_args   jsonb       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  bucket     smallint    NOT NULL DEFAULT 0,
  PRIMARY KEY (bucket, id)
);

COMMENT ON TABLE phasekey.staged_jobs IS
  'The transactional outbox: jobs staged by atomic phases, deleted once a job sink accepted them.';


-- ---------------------------------------------------------------------------
-- phasekey.inbox_events: the inbox (docs/inbox.md).
--
-- Inbound events (a gateway's webhooks) recorded by (provider, event id) in
-- the same transaction as the handler's own writes, so each is applied
-- exactly once however often it arrives. The primary key is the only
-- serialization point between concurrent deliveries of one event (INSERT
-- ... ON CONFLICT DO NOTHING); events of one object are further serialized
-- by a transaction-scoped advisory lock (sql/queries/inbox.sql).
--
-- Invariants: an applied event has its applied_at, a parked one its
-- park_reason, and only they. (bucket comes last only because it was added
-- last; its default 0 is for writers that leave it out, such as tests: the
-- engine's statement always passes it.)
-- ---------------------------------------------------------------------------
CREATE TYPE phasekey.inbox_state AS ENUM (
  'applied',  -- the handler's writes committed with the row; a redelivery is a duplicate
  'parked'    -- the handler found a prerequisite missing; retried when another
              -- event of the same object is applied, or by the sweep
);

CREATE TABLE phasekey.inbox_events (
  -- Arrival order: parked events of an object are retried in this order.
  id          bigint      GENERATED ALWAYS AS IDENTITY,
  provider    text        NOT NULL CHECK (char_length(provider) BETWEEN 1 AND 100),
  event_id    text        NOT NULL CHECK (char_length(event_id) BETWEEN 1 AND 255),
  object_id   text        NOT NULL CHECK (char_length(object_id) BETWEEN 1 AND 255),
  event_type  text        NOT NULL CHECK (char_length(event_type) BETWEEN 1 AND 255),
  payload     bytea       NOT NULL,  -- the body as received, for parked retries
  state       phasekey.inbox_state NOT NULL,
  park_reason text,
  attempts    integer     NOT NULL DEFAULT 1 CHECK (attempts >= 1),
  received_at timestamptz NOT NULL DEFAULT now(),
  applied_at  timestamptz,
  bucket      smallint    NOT NULL DEFAULT 0,
  PRIMARY KEY (bucket, provider, event_id),
  CONSTRAINT inbox_applied_has_time CHECK ((state = 'applied') = (applied_at IS NOT NULL)),
  CONSTRAINT inbox_parked_has_reason CHECK ((state = 'parked') = (park_reason IS NOT NULL))
);

-- What a receive and the sweep read: parked events per object, by arrival.
CREATE INDEX inbox_events_parked
  ON phasekey.inbox_events (bucket, provider, object_id, id)
  WHERE state = 'parked';

-- What the reaper scans: applied events by age.
CREATE INDEX inbox_events_reap
  ON phasekey.inbox_events (bucket, applied_at)
  WHERE state = 'applied';

COMMENT ON TABLE phasekey.inbox_events IS
  'Inbound events applied exactly once, in the transaction of the handler''s writes (docs/inbox.md).';


-- ---------------------------------------------------------------------------
-- phasekey.operator_audit: the operators' audit trail (docs/console.md).
--
-- Every action an operator takes on a key (retry, release, reveal, ...), who
-- took it, when, and what came of it, refused attempts included. Rows are
-- only ever inserted; the reaper leaves them alone (a key's history outlives
-- the key), so the key is named by value, not referenced.
-- ---------------------------------------------------------------------------
CREATE TABLE phasekey.operator_audit (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at              timestamptz NOT NULL DEFAULT now(),
  actor           text        NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 200),
  action          text        NOT NULL CHECK (char_length(action) BETWEEN 1 AND 50),
  account         text        NOT NULL,
  idempotency_key text        NOT NULL,
  succeeded       boolean     NOT NULL,
  outcome         text        NOT NULL
);

-- A key's history, in order.
CREATE INDEX operator_audit_key ON phasekey.operator_audit (account, idempotency_key, id);

COMMENT ON TABLE phasekey.operator_audit IS
  'Every operator action on a key, refused ones included; insert-only, never reaped.';


-- ---------------------------------------------------------------------------
-- Sealed bodies (docs/data-protection.md): phasekey.data_keys and
-- phasekey.key_encryption_keys.
--
-- Envelope encryption: each account has a data key (AES-256), kept here
-- wrapped (AES-256-GCM) by a key-encryption key the operator supplies and
-- phasekey never stores; `kek_id` names which one. A key row whose
-- data_key_id is set holds its request body, its response body and the
-- values of its foreign outcomes sealed under that data key.
--
-- Erasing an account destroys its data keys (`wrapped` set NULL): every body
-- sealed under them is unreadable at once, in the table, its old row
-- versions, the WAL and any backup taken after the key-encryption key that
-- wrapped them is retired.
-- ---------------------------------------------------------------------------
CREATE TABLE phasekey.data_keys (
  bucket      smallint    NOT NULL CHECK (bucket >= 0),
  id          bigint      GENERATED ALWAYS AS IDENTITY,
  account     text        NOT NULL CHECK (char_length(account) BETWEEN 1 AND 200),
  kek_id      text        NOT NULL,
  wrapped     bytea,      -- nonce, sealed key, tag; NULL once erased
  created_at  timestamptz NOT NULL DEFAULT now(),
  erased_at   timestamptz,
  PRIMARY KEY (bucket, id),
  CONSTRAINT erased_has_no_key CHECK ((wrapped IS NULL) = (erased_at IS NOT NULL))
);

-- One live data key per account: two processes that create one at once meet
-- here, and the loser reads the winner's.
CREATE UNIQUE INDEX data_keys_live ON phasekey.data_keys (bucket, account) WHERE erased_at IS NULL;
-- What `phasekey keys rotate-kek` re-wraps: live data keys by the key that
-- wraps them.
CREATE INDEX data_keys_wrapped_by ON phasekey.data_keys (kek_id) WHERE erased_at IS NULL;

COMMENT ON TABLE phasekey.data_keys IS
  'Each account''s data keys, wrapped by a key-encryption key; erasing an account sets wrapped NULL.';

-- Every key-encryption key that has wrapped a data key, with a check value
-- (a constant sealed under it), so a process started with a wrong key, or
-- without one the stored data keys need, refuses to start before it touches
-- any key. A row is removed when rotation leaves nothing wrapped by it.
CREATE TABLE phasekey.key_encryption_keys (
  kek_id      text        PRIMARY KEY CHECK (kek_id ~ '^[A-Za-z0-9._-]{1,64}$'),
  check_value bytea       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE phasekey.key_encryption_keys IS
  'The key-encryption keys that wrap data keys, each with a check value; the keys themselves are never stored.';


-- ---------------------------------------------------------------------------
-- phasekey.flow_masks: the JSON pointers each flow masks wherever a body is
-- shown (Flow::Builder::Masked), recorded by Runner::Open so that the
-- operator's tools, which do not link the application's flows, mask them
-- too.
-- ---------------------------------------------------------------------------
CREATE TABLE phasekey.flow_masks (
  flow        text        PRIMARY KEY CHECK (char_length(flow) BETWEEN 1 AND 100),
  pointers    text[]      NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE phasekey.flow_masks IS
  'The JSON pointers each flow masks wherever a body is shown, recorded by Runner::Open.';
