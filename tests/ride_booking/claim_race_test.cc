// The ride example's own flow (examples/ride_booking/ride_flow.cc) in the
// race the claim's gate cannot close: two requests with the same new key,
// the second's claim taken while the first holds the gate, passing it just
// after the first commits. Its first phase then inserts the ride the first
// one already committed (rides is unique on the user and the key): 23505,
// before its key row's insert. The request must still get the right answer
// (409 while the first holds the key, or its replay) and keep nothing: one
// ride, one audit record, one charge.
//
// Nothing in the example is hooked. The first request is held inside its
// first phase by a SHARE lock on audit_records (its second insert waits);
// the gate is made to wait instead of answering busy by a function the
// claim's own statement resolves to (search_path public, pg_catalog; the
// same device as tests/pg/pg_key_store_test.cc).
#include <gtest/gtest.h>

#include <future>
#include <pqxx/pqxx>

#include "phasekey/runner.h"
#include "ride_charger.h"
#include "ride_flow.h"
#include "ride_store.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;

const std::string kBody = R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})";

TEST(ExampleClaimRaceTest, TheLoserOfTheRaceForANewKeyMeetsTheWinnersRideAndKeepsNothing) {
  TestDatabase db;
  ride_booking::RideStore store(db.url());
  ASSERT_TRUE(store.Migrate().ok());
  ASSERT_TRUE(store.EnsureDemoUsers().has_value());
  db.Exec(
      "CREATE FUNCTION public.pg_try_advisory_xact_lock(key bigint) RETURNS boolean LANGUAGE plpgsql AS $$ "
      "BEGIN PERFORM pg_catalog.pg_advisory_xact_lock(key); RETURN pg_catalog.pg_try_advisory_xact_lock(key); "
      "END $$");
  db.Exec("ALTER DATABASE \"" + db.name() + "\" SET search_path = public, pg_catalog");

  testing::RideWorld world({.database_url = db.url()});  // the fake gateway, a process of its own
  ride_booking::RideCharger charger("stripe", "http://127.0.0.1:" + std::to_string(world.gateway_port()),
                                    milliseconds(2000));

  RunnerOptions o;
  o.database.url = db.url();
  o.database.pool_size = 4;
  o.backoff_base = milliseconds(1);
  o.backoff_cap = milliseconds(2);
  auto runner = Runner::Open(o, {ride_booking::MakeRideFlow(charger)});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
  const Request request{"user_1", "race-0001", "POST", "/rides", kBody};
  const auto send = [&] { return (*runner)->Execute(ride_booking::kFlowName, request); };

  pqxx::connection holder(db.url());
  pqxx::work hold(holder);
  hold.exec0("LOCK TABLE audit_records IN SHARE MODE");
  auto winner = std::async(std::launch::async, send);
  const bool winner_in_first_phase = db.WaitForValue(
      "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
      "WHERE c.relname = 'audit_records' AND NOT l.granted",
      "1");
  auto loser = std::async(std::launch::async, send);
  const bool loser_at_the_gate = db.WaitForValue(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
      "AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
      "1");
  hold.commit();
  const Reply won = winner.get();
  const Reply lost = loser.get();
  ASSERT_TRUE(winner_in_first_phase) << "the winner's create_ride waited on audit_records, holding the gate";
  ASSERT_TRUE(loser_at_the_gate) << "the loser's claim reached the gate while the winner held it";
  ASSERT_EQ(db.Value("SELECT last_value FROM pg_sequences WHERE sequencename = 'idempotency_keys_id_seq'"), "2")
      << "the loser passed the gate: its claim reserved a key row id (the winner's is 1)";
  ASSERT_EQ(db.Value("SELECT last_value || ' ' || (SELECT count(*) FROM rides) FROM pg_sequences "
                     "WHERE sequencename = 'rides_id_seq'"),
            "2 1")
      << "the loser's ride insert drew id 2 and was refused by the unique index (23505)";

  ASSERT_EQ(won.kind, Reply::Kind::kCompleted) << won.detail;
  EXPECT_EQ(won.response.status, 201);
  EXPECT_TRUE(lost.kind == Reply::Kind::kInProgress || lost.kind == Reply::Kind::kReplayed)
      << "the loser answers from the winner's key, got kind " << static_cast<int>(lost.kind) << ": " << lost.detail;
  if (lost.kind == Reply::Kind::kReplayed) {
    EXPECT_EQ(lost.response.body, won.response.body);
  }
  const Reply retry = send();
  EXPECT_EQ(retry.kind, Reply::Kind::kReplayed) << retry.detail;
  EXPECT_EQ(retry.response.body, won.response.body);
  EXPECT_EQ(db.Value("SELECT count(*) FROM rides"), "1");
  EXPECT_EQ(db.Value("SELECT count(*) FROM audit_records"), "1") << "nothing of the loser's first phase kept";
  EXPECT_EQ(db.Value("SELECT count(*) || ' ' || min(state::text) || ' ' || min(attempts) "
                     "FROM phasekey.idempotency_keys"),
            "1 finished 1");
  EXPECT_EQ(world.Ledger().size(), 1u) << "one charge";
}

}  // namespace
}  // namespace phasekey
