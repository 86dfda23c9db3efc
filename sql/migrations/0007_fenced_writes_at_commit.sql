-- Fenced writes that travel with COMMIT (issue 16): the engine sends the
-- fenced move or finish of a transaction in the same simple-protocol query
-- as its COMMIT ("EXECUTE ...; COMMIT"), which saves a round trip, but then
-- it cannot read the statement's row count before committing. The statement
-- instead passes its count here, and a count other than one raises SQLSTATE
-- PK001: PostgreSQL stops the query at the error, so COMMIT never runs and
-- the engine sees a lost lease (pg/transaction.h, pg/db_failure.cc).
CREATE FUNCTION phasekey.fence_held(matched bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF matched <> 1 THEN
    RAISE EXCEPTION 'phasekey: the fenced statement matched % rows: the lease was lost', matched
      USING ERRCODE = 'PK001';
  END IF;
END
$$;
