-- The key row's single-column limits move into the engine. PostgreSQL reads
-- and plans every CHECK constraint of a table again for each statement that
-- writes a row of it (ExecConstraints deserializes each expression); with
-- fourteen constraints that cost 60 to 100 microseconds of server CPU per
-- write, three writes per request: about an eighth of the ride flow's time
-- (docs/benchmarks.md). The engine checks the same limits before any
-- statement (Runner::Execute: account, key, method and path lengths;
-- Flow::Builder: flow and recovery point names; the finish step: the
-- response status), so bad input still never reaches the table, and gets a
-- clear error instead of a constraint violation. The bucket is computed, the
-- fingerprint is always a SHA-256 and attempts only grow.
--
-- The four constraints that tie columns together stay: they guard the
-- state machine against any writer (a finished key has its response and
-- sits at 'finished'; a lease has its owner, lock time and expiry together;
-- only an active key is leased).
ALTER TABLE phasekey.idempotency_keys
  DROP CONSTRAINT idempotency_keys_account_check,
  DROP CONSTRAINT idempotency_keys_idempotency_key_check,
  DROP CONSTRAINT idempotency_keys_bucket_check,
  DROP CONSTRAINT idempotency_keys_flow_check,
  DROP CONSTRAINT idempotency_keys_request_method_check,
  DROP CONSTRAINT idempotency_keys_request_path_check,
  DROP CONSTRAINT idempotency_keys_request_fingerprint_check,
  DROP CONSTRAINT idempotency_keys_recovery_point_check,
  DROP CONSTRAINT idempotency_keys_attempts_check,
  DROP CONSTRAINT idempotency_keys_response_status_check;
