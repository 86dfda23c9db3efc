-- The raw_two_commits ride of the durability family (bench/support/raw_ride.cc,
-- RawRide::Run) as a pgbench script: the hand-written floor, C libpq with
-- prepared statements (pgbench -M prepared), no engine, no C++ client.
-- Same tables (CreateRideTables, tests/support/ride_flow.cc), same statements,
-- same two commits, one statement per round trip. The in-process gateway of
-- the C++ baseline answers at once with a new charge id; here the id is made
-- from the key, with no call at all.
--
-- Differences that remain, all in the floor's favour or neutral: the key is a
-- random 63-bit number (distinct with overwhelming probability) instead of
-- "raw<run>-<seq>"; the account and the receipt job's JSON are built on the
-- server (|| and jsonb_build_object) instead of in the client.
\set seq random(1, 9223372036854775806)
\set acct random(0, 63)
\set lat 37.0 + random(0, 999) / 1000.0
BEGIN;
INSERT INTO rides (account, idem_key, origin_lat) VALUES ('acct-' || :acct::text, 'pgb-' || :seq::text, :lat);
COMMIT;
BEGIN;
UPDATE rides SET charge_id = 'ch_' || :seq::text WHERE account = 'acct-' || :acct::text AND idem_key = 'pgb-' || :seq::text RETURNING id;
INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', jsonb_build_object('account', 'acct-' || :acct::text, 'charge_id', 'ch_' || :seq::text));
COMMIT;
