-- The operator console (issue 20): its audit trail, and an index for its
-- keys table.
--
-- The audit trail: every action an operator
-- takes on a key from the console (retry, release), who took it, when, and
-- what came of it, refused attempts included. Rows are only ever inserted;
-- the reaper leaves them alone (a key's history outlives the key).
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

CREATE INDEX operator_audit_key ON phasekey.operator_audit (account, idempotency_key, id);

-- The console's keys table filtered to dead or parked keys, in primary-key
-- order (sql/queries/console_queries.sql, ConsoleKeysPage). Partial, so the
-- request path never writes it: a key enters it only when it is given up or
-- parked, and `state` is already in the predicates of the re-drive and reap
-- indexes, so this index makes no update less HOT than it was.
CREATE INDEX idempotency_keys_attention
  ON phasekey.idempotency_keys (bucket, account, id)
  WHERE state IN ('dead', 'needs_operator');
