-- The operator console's audit trail (issue 20): every action an operator
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
