-- The inbox: inbound events (a gateway's webhooks) recorded by (provider,
-- event id) in the same transaction as the handler's own writes, so each is
-- applied exactly once however often it arrives. The primary key is the only
-- serialization point between concurrent deliveries of one event (INSERT ...
-- ON CONFLICT DO NOTHING); events of one object are further serialized by a
-- transaction-scoped advisory lock (see sql/queries/inbox.sql).

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
  PRIMARY KEY (provider, event_id),
  CONSTRAINT inbox_applied_has_time CHECK ((state = 'applied') = (applied_at IS NOT NULL)),
  CONSTRAINT inbox_parked_has_reason CHECK ((state = 'parked') = (park_reason IS NOT NULL))
);

-- What a receive and the sweep read: parked events per object, by arrival.
CREATE INDEX inbox_events_parked
  ON phasekey.inbox_events (provider, object_id, id)
  WHERE state = 'parked';

-- What the reaper scans: applied events by age.
CREATE INDEX inbox_events_reap
  ON phasekey.inbox_events (applied_at)
  WHERE state = 'applied';
