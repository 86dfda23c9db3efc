-- The wallet service's tables, beside phasekey's own schema (phasekey.*).
-- One balance per account, and one row per top-up, written by the flow's
-- first phase and completed by its last.
CREATE TABLE wallets (
  account text PRIMARY KEY,
  balance bigint NOT NULL DEFAULT 0 CHECK (balance >= 0)  -- minor units (cents)
);

CREATE TABLE topups (
  id              bigserial PRIMARY KEY,
  account         text NOT NULL,
  idempotency_key text NOT NULL,
  amount          bigint NOT NULL CHECK (amount > 0),
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'credited')),
  charge_id       text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (account, idempotency_key)
);
