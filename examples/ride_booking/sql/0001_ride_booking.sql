-- The ride booking example's own tables (component "ride_booking"), beside
-- the engine's schema. Leach's Rocket Rides schema, fixed where he was wrong
-- (see docs/ride_booking.md).

CREATE TABLE users (
  id          bigint PRIMARY KEY,
  email       text NOT NULL UNIQUE CHECK (char_length(email) <= 255),
  api_token   text NOT NULL UNIQUE CHECK (char_length(api_token) <= 100),
  customer_id text NOT NULL UNIQUE CHECK (char_length(customer_id) <= 50)
);

CREATE TABLE rides (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id         bigint NOT NULL REFERENCES users ON DELETE RESTRICT,
  -- The idempotency key that created the ride: one ride per key, whatever
  -- is retried or re-driven.
  idempotency_key text NOT NULL,
  origin_lat      double precision NOT NULL CHECK (origin_lat BETWEEN -90 AND 90),
  origin_lon      double precision NOT NULL CHECK (origin_lon BETWEEN -180 AND 180),
  target_lat      double precision NOT NULL CHECK (target_lat BETWEEN -90 AND 90),
  target_lon      double precision NOT NULL CHECK (target_lon BETWEEN -180 AND 180),
  charge_id       text UNIQUE CHECK (char_length(charge_id) <= 100),  -- NULL until charged
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (user_id, idempotency_key)
);

CREATE TABLE audit_records (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  action        text NOT NULL CHECK (char_length(action) <= 50),
  data          jsonb NOT NULL,
  resource_id   bigint NOT NULL,
  resource_type text NOT NULL CHECK (char_length(resource_type) <= 50),
  user_id       bigint NOT NULL REFERENCES users ON DELETE RESTRICT,
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- Receipts "sent" by the enqueuer's sink; the staged job's id makes a
-- redelivered job a no-op.
CREATE TABLE receipts (
  job_id     bigint PRIMARY KEY,
  user_id    bigint NOT NULL REFERENCES users ON DELETE RESTRICT,
  ride_id    bigint NOT NULL,
  charge_id  text NOT NULL,
  amount     integer NOT NULL,
  currency   text NOT NULL,
  sent_at    timestamptz NOT NULL DEFAULT now()
);
