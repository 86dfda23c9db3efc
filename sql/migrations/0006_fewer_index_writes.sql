-- Fewer index writes per request (docs/benchmarks.md, issue 16):
--
-- 1. No index on stable_id. No query looks a key up by it: provider keys are
--    derived from it and it is random (gen_random_uuid, 122 random bits), so
--    a unique index only cost one more entry for every row version the
--    claim and the finish write.
-- 2. Room on each page for the key's later versions (fillfactor 80): the
--    fenced move and the lease renewals change no indexed column, so with
--    free space on the page they are HOT updates (no index entries at all).
--    The finish changes `state`, which the partial indexes read, and stays a
--    regular update.
DROP INDEX phasekey.idempotency_keys_stable_id;
ALTER TABLE phasekey.idempotency_keys SET (fillfactor = 80);
