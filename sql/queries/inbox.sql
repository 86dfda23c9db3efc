-- Named queries of engine/src/inbox/inbox.cc. Every row carries the bucket
-- of its object (AccountBucket of "<provider>:<object id>"), and every
-- statement on the table filters on it, so an object's events and their
-- handler's transaction stay on one shard.

-- name: InboxObjectLock
-- Serializes the events of one object (provider, object id) until the end of
-- the transaction. A hash collision only serializes two unrelated objects.
SELECT pg_advisory_xact_lock(hashtextextended('phasekey.inbox:' || $1 || ':' || $2, 0));

-- name: InboxEventInsert
-- Records an event as applied. No row back: the event was recorded before
-- (by a committed or a concurrent transaction, which this one waits for).
INSERT INTO phasekey.inbox_events
  (bucket, provider, event_id, object_id, event_type, payload, state, applied_at)
VALUES ($6, $1, $2, $3, $4, decode($5, 'hex'), 'applied', now())
ON CONFLICT (bucket, provider, event_id) DO NOTHING
RETURNING id;

-- name: InboxEventPark
-- The event just inserted by this transaction: its handler asked to park.
UPDATE phasekey.inbox_events
SET state = 'parked', park_reason = $2, applied_at = NULL
WHERE bucket = $3 AND id = $1 AND state = 'applied';

-- name: InboxParkedOfObject
-- Parked events of one object, in arrival order (the caller holds the
-- object's lock).
SELECT id, event_id, event_type, encode(payload, 'hex')
FROM phasekey.inbox_events
WHERE bucket = $3 AND provider = $1 AND object_id = $2 AND state = 'parked'
ORDER BY id
FOR UPDATE;

-- name: InboxEventUnpark
-- A parked event whose handler applied it on a retry.
UPDATE phasekey.inbox_events
SET state = 'applied', park_reason = NULL, applied_at = now(), attempts = attempts + 1
WHERE bucket = $2 AND id = $1 AND state = 'parked';

-- name: InboxEventStillParked
-- A parked event whose retry parked (or failed) again.
UPDATE phasekey.inbox_events
SET park_reason = $2, attempts = attempts + 1
WHERE bucket = $3 AND id = $1 AND state = 'parked';

-- name: InboxParkedObjects
-- Objects with parked events of one bucket for the sweep: the least retried
-- first (each retry counts an attempt), then the oldest, so objects parked
-- for good do not keep the others from their turn.
SELECT provider, object_id
FROM phasekey.inbox_events
WHERE bucket = $2 AND state = 'parked'
GROUP BY provider, object_id
ORDER BY min(attempts), min(id)
LIMIT $1;

-- name: InboxHandlerSavepoint
SAVEPOINT phasekey_inbox_handler;

-- name: InboxHandlerRollback
ROLLBACK TO SAVEPOINT phasekey_inbox_handler;

-- name: InboxHandlerRelease
RELEASE SAVEPOINT phasekey_inbox_handler;
