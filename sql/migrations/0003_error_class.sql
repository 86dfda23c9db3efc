-- The class of a key's last error (docs/operations.md, "Finding keys"), so
-- that an operator can find "every key parked because a provider could not
-- be verified" or "every key a bug stopped" without reading last_error's
-- free text. A closed set, as an enum: unknown values fail at the cast, and
-- an enum costs no CHECK per statement on the key row (docs/database.md).
-- A later release adds a value with ALTER TYPE ... ADD VALUE in its own
-- migration (each migration commits on its own, pg/migrator.cc).
CREATE TYPE phasekey.error_class AS ENUM (
  'retryable',        -- a phase answered Retry: the key waits for a retry or the re-drive worker
  'outcome_unknown',  -- a foreign phase answered OutcomeUnknown: the call may have taken effect; retried
  'terminal',         -- a phase answered Terminal: the key finished with that failure's response
  'needs_operator',   -- a foreign phase answered NeedsOperator: parked, nothing sent again
  'not_taken',        -- a lookup past give-up time found the operation never happened: given up (dead)
  'unclassified',     -- a phase threw or broke its contract (a bug), counted in failures; also the
                      -- dead-lettering or parking at the failure cap, and the 500 stored there
  'lookup_required',  -- a foreign phase had to look up first (its provider may have forgotten the key,
                      -- or the key is past give_up_after) and declares no lookup: parked
  'given_up',         -- older than give_up_after with nothing started: given up (dead)
  'stranded',         -- at a recovery point the running flow neither has nor maps: parked
  'retired_point',    -- at a recovery point the flow retired for an operator: parked
  'erased'            -- the account was erased while the key was unfinished: parked
);

-- Written by every statement that writes a failure into last_error, in the
-- same statement (sql/queries/key_store.sql, redrive_worker.sql,
-- data_protection.sql); NULL when the key holds no error (a key that
-- finished with a success clears both). An operator's note (keys retry,
-- keys release, their batch forms) is appended to last_error but leaves the
-- class alone: it is not an error, and the class still says what the key
-- last failed of. No index: the operator's filters combine it with the
-- indexed ones (sql/queries/key_admin.sql says what each costs), and an
-- index here would be written on every retryable failure.
ALTER TABLE phasekey.idempotency_keys ADD COLUMN error_class phasekey.error_class;

COMMENT ON COLUMN phasekey.idempotency_keys.error_class IS
  'The class of the last error (type phasekey.error_class, one value per kind of failure: '
  'retryable, outcome_unknown, terminal, needs_operator, not_taken, unclassified, lookup_required, given_up, '
  'stranded, retired_point, erased); NULL when last_error holds no error. Operator notes leave it alone.';
