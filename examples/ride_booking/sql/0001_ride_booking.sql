-- The ride booking example's own tables (component "ride_booking"), beside
-- the engine's schema: Leach's Rocket Rides schema, fixed where he was wrong
-- (see docs/ride_booking.md). One baseline made before the first release
-- from the four migrations written while the example grew (none was ever
-- released); migrations after this one are its upgrade history.


-- The service's users (the demo's are created at start: RideStore::
-- EnsureDemoUsers).
CREATE TABLE users (
  id          bigint PRIMARY KEY,
  email       text NOT NULL UNIQUE CHECK (char_length(email) <= 255),
  api_token   text NOT NULL UNIQUE CHECK (char_length(api_token) <= 100),
  customer_id text NOT NULL UNIQUE CHECK (char_length(customer_id) <= 50)
);

-- One ride per idempotency key, whatever is retried or re-driven (the
-- unique (user_id, idempotency_key)); its charge and refund are the
-- gateway's ids, each unique, NULL until the ride is charged or refunded.
CREATE TABLE rides (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id         bigint NOT NULL REFERENCES users ON DELETE RESTRICT,
  -- The idempotency key that created the ride.
  idempotency_key text NOT NULL,
  origin_lat      double precision NOT NULL CHECK (origin_lat BETWEEN -90 AND 90),
  origin_lon      double precision NOT NULL CHECK (origin_lon BETWEEN -180 AND 180),
  target_lat      double precision NOT NULL CHECK (target_lat BETWEEN -90 AND 90),
  target_lon      double precision NOT NULL CHECK (target_lon BETWEEN -180 AND 180),
  charge_id       text UNIQUE CHECK (char_length(charge_id) <= 100),  -- NULL until charged
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- The refund of the ride's charge (POST /rides/{id}/refund,
  -- refund_flow.h): NULL until refunded. A ride is refunded once, whole.
  refund_id       text UNIQUE CHECK (char_length(refund_id) <= 100),
  UNIQUE (user_id, idempotency_key)
);

-- What the service did, one row per action (e.g. 'ride.created'), written in
-- the atomic phase that did it.
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

-- Every receipt job the enqueuer handed to the receipt sink, one row per
-- delivery: a job delivered again (its batch's delete was lost) has a second
-- row. `sent` says whether that delivery sent the receipt (wrote its row in
-- receipts); a redelivery of a job already sent is deduplicated, sent =
-- false. Nothing here is unique, so a receipt sent twice shows as two rows
-- with sent = true: what the crash matrix counts
-- (tests/ride_booking/crash_matrix_test.cc).
CREATE TABLE receipt_deliveries (
  id           bigserial PRIMARY KEY,
  job_id       bigint NOT NULL,
  ride_id      bigint NOT NULL,
  sent         boolean NOT NULL,
  delivered_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX receipt_deliveries_job_id ON receipt_deliveries (job_id);

-- Each charge's payment state as the gateway's webhook events tell it
-- (payment_events.cc, through the engine's inbox: docs/inbox.md). A row
-- appears with charge.succeeded; charge.refunded moves it to 'refunded', and
-- is parked by the inbox while the row does not exist yet.
CREATE TABLE ride_payments (
  charge_id  text PRIMARY KEY CHECK (char_length(charge_id) BETWEEN 1 AND 100),
  state      text NOT NULL CHECK (state IN ('succeeded', 'refunded')),
  updated_at timestamptz NOT NULL DEFAULT now()
);
