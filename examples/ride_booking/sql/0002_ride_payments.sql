-- Each charge's payment state as the gateway's webhook events tell it
-- (payment_events.cc, through the engine's inbox: docs/inbox.md). A row
-- appears with charge.succeeded; charge.refunded moves it to 'refunded', and
-- is parked by the inbox while the row does not exist yet.
CREATE TABLE ride_payments (
  charge_id  text PRIMARY KEY CHECK (char_length(charge_id) BETWEEN 1 AND 100),
  state      text NOT NULL CHECK (state IN ('succeeded', 'refunded')),
  updated_at timestamptz NOT NULL DEFAULT now()
);
