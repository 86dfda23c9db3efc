-- Stored bodies sealed, kept no longer than needed, erasable per account
-- (issue 30; docs/data-protection.md).
--
-- Envelope encryption: each account has a data key (AES-256), kept here
-- wrapped (AES-256-GCM) by a key-encryption key the operator supplies and
-- phasekey never stores; `kek_id` names which one. A key row whose
-- `data_key_id` is set holds its request body, its response body and the
-- values of its foreign outcomes sealed under that data key; NULL means
-- they are stored as they are (encryption off, or a row from before it was
-- turned on). The fingerprint stays a plain SHA-256, so a reused key is told
-- from its first use without decrypting anything.
--
-- Erasing an account destroys its data keys (`wrapped` set NULL): every body
-- sealed under them is unreadable at once, in the table, its old row
-- versions, the WAL and any backup taken after the key-encryption key that
-- wrapped them is retired.

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

-- Every key-encryption key that has wrapped a data key, with a check value
-- (a constant sealed under it), so a process started with a wrong key, or
-- without one the stored data keys need, refuses to start before it touches
-- any key. A row is removed when rotation leaves nothing wrapped by it.
CREATE TABLE phasekey.key_encryption_keys (
  kek_id      text        PRIMARY KEY CHECK (kek_id ~ '^[A-Za-z0-9._-]{1,64}$'),
  check_value bytea       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- The JSON pointers each flow masks wherever a body is shown (Flow's
-- masked fields), recorded by Runner::Open so that the operator's tools,
-- which do not link the application's flows, mask them too.
CREATE TABLE phasekey.flow_masks (
  flow        text        PRIMARY KEY CHECK (char_length(flow) BETWEEN 1 AND 100),
  pointers    text[]      NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

DROP VIEW phasekey.key_rows;

-- request_body becomes bytes like response_body (a sealed envelope is not
-- text), and nullable: dropped once the key finishes (the fingerprint
-- remains for the 422), or when the account is erased.
ALTER TABLE phasekey.idempotency_keys
  ALTER COLUMN request_body DROP NOT NULL,
  ALTER COLUMN request_body TYPE bytea USING convert_to(request_body, 'UTF8'),
  ADD COLUMN data_key_id bigint,
  ADD COLUMN erased_at timestamptz;

-- Finished keys already stored keep no request body.
UPDATE phasekey.idempotency_keys SET request_body = NULL WHERE state = 'finished';

-- The view of migration 0006 with the body as hex and two columns more: the
-- data key the row's bodies are sealed under, and whether the account was
-- erased.
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
