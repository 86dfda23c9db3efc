// Moving a bucket between two PostgreSQL servers while a key of it is in
// flight (docs/scaling.md, "Moving buckets between servers"): two real
// servers (the test server and a dedicated one), a bucket map the test
// keeps, and the move done as the page writes it down: fence the bucket on
// the old server, copy its rows, switch the map, drop the bucket there. The
// holder that was mid-phase on the old server is refused by the fence; the
// key finishes once, on the new server, by the re-drive worker; the
// provider saw its key twice and charged once.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <pqxx/pqxx>
#include <string>

#include "phasekey/migrate.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/dedicated_postgres.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::DedicatedPostgres;
using testing::TestDatabase;
using testing::TestGateway;

constexpr int kBuckets = 16;
const std::string kBody = R"({"origin_lat": 1.5})";
const std::string kMoving = "acct-moving";  // its bucket moves
const std::string kStaying = "acct-0";      // another bucket, stays

testing::DedicatedPostgresOptions Named(const std::string& name) {
  testing::DedicatedPostgresOptions o;
  o.name = name;
  return o;
}

void Exec(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  tx.exec0(sql);
  tx.commit();
}

std::string Value(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  const pqxx::row r = tx.exec1(sql);
  return r[0].is_null() ? "<null>" : r[0].as<std::string>();
}

// Copies the rows `select` returns from `from` into `table` on `to`,
// column for column (both servers have the same schema).
int CopyRows(const std::string& from, const std::string& to, const std::string& table, const std::string& select) {
  pqxx::connection src(from), dst(to);
  pqxx::nontransaction read(src);
  pqxx::work write(dst);
  int n = 0;
  for (const auto& row : read.exec("SELECT row_to_json(t)::text FROM (" + select + ") t")) {
    write.exec_params0("INSERT INTO " + table +
                           " OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_record(NULL::" + table + ", $1::json)",
                       row[0].as<std::string>());
    ++n;
  }
  write.commit();
  return n;
}

class BucketMoveTest : public ::testing::Test {
 protected:
  BucketMoveTest() : new_server_(Named("bucket-move")) {}

  void SetUp() override {
    ASSERT_NE(AccountBucket(kMoving, kBuckets), AccountBucket(kStaying, kBuckets));
    const Status started = new_server_.Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    auto migrated = Migrate(new_server_.url(), EngineMigrations());
    ASSERT_TRUE(migrated.has_value()) << migrated.error().ToString();
    for (const std::string& url : {old_.url(), new_server_.url()}) testing::CreateRideTables(url);
  }

  std::unique_ptr<Runner> OpenRunner(const std::string& url) {
    RunnerOptions o;
    o.database.url = url;
    o.database.pool_size = 4;
    o.buckets = kBuckets;
    o.lease = milliseconds(120000);  // never expires during the test: only the fence takes it
    o.backoff_base = milliseconds(2);
    o.backoff_cap = milliseconds(5);
    o.redrive_delay = milliseconds(1);
    auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway_, milliseconds(60000))});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  // The move of `bucket` from `from` to `to`, as docs/scaling.md writes it
  // down, up to the switch of the map (the caller switches it).
  // 1. Fence, in one transaction on the old server: every active key of the
  //    bucket loses its lease and is due now (what `keys release` does to
  //    one key), and a NOT VALID check constraint refuses any new or updated
  //    row of the bucket there from its commit on.
  // 2. Copy the bucket's keys and the application's rows of its accounts,
  //    and move the new server's key id sequence past the copied ids.
  void FenceAndCopy(int bucket, const std::string& from, const std::string& to) {
    const std::string b = std::to_string(bucket);
    {
      pqxx::connection conn(from);
      pqxx::work tx(conn);
      tx.exec0(
          "UPDATE phasekey.idempotency_keys SET owner_token = NULL, locked_at = NULL, lease_expires_at = NULL,"
          " next_attempt_at = now(), updated_at = now() WHERE bucket = " +
          b + " AND state = 'active'");
      tx.exec0("ALTER TABLE phasekey.idempotency_keys ADD CONSTRAINT bucket_" + b + "_moved CHECK (bucket <> " + b +
               ") NOT VALID");
      tx.commit();
    }
    copied_keys_ =
        CopyRows(from, to, "phasekey.idempotency_keys", "SELECT * FROM phasekey.idempotency_keys WHERE bucket = " + b);
    // The new server's identity must not hand out a copied key's id again.
    Value(to,
          "SELECT setval(pg_get_serial_sequence('phasekey.idempotency_keys', 'id'), "
          "(SELECT max(id) FROM phasekey.idempotency_keys))");
    CopyRows(from, to, "rides",
             "SELECT * FROM rides WHERE account IN (SELECT account FROM phasekey.idempotency_keys WHERE bucket = " + b +
                 ")");
  }

  // 4. Drop the bucket's rows from the old server (the constraint stays:
  //    a process that still routes by the old map cannot claim there).
  void DropBucket(int bucket, const std::string& from) {
    const std::string b = std::to_string(bucket);
    Exec(from,
         "DELETE FROM rides WHERE account IN (SELECT account FROM phasekey.idempotency_keys WHERE bucket = " + b + ")");
    Exec(from, "DELETE FROM phasekey.idempotency_keys WHERE bucket = " + b);
  }

  TestDatabase old_;
  DedicatedPostgres new_server_;
  TestGateway gateway_;
  int copied_keys_ = 0;
};

TEST_F(BucketMoveTest, AKeyInFlightIsFencedOnTheOldServerAndFinishesOnceOnTheNew) {
  const int bucket = AccountBucket(kMoving, kBuckets);
  std::map<int, std::string> map;  // bucket -> server URL: every bucket on the old server
  for (int b = 0; b < kBuckets; ++b) map[b] = old_.url();
  auto on_old = OpenRunner(old_.url());
  auto on_new = OpenRunner(new_server_.url());
  ASSERT_TRUE(on_old && on_new);
  const Request request{kMoving, "in-flight", "POST", "/rides", kBody};

  // The holder on the old server stops inside its charge, at recovery point
  // ride_created, holding the lease.
  std::promise<void> inside, go_on;
  auto go_on_future = go_on.get_future().share();
  std::atomic<bool> first{true};
  gateway_.set_before_call([&] {
    if (!first.exchange(false)) return;
    inside.set_value();
    go_on_future.wait();
  });
  ASSERT_EQ(map[bucket], old_.url());
  auto stale = std::async(std::launch::async, [&] { return on_old->Execute("create_ride", request); });
  inside.get_future().wait();
  const std::string holder =
      Value(old_.url(), "SELECT owner_token FROM phasekey.idempotency_keys WHERE idempotency_key = 'in-flight'");
  ASSERT_NE(holder, "<null>") << "the key is not in flight: nothing to fence";
  ASSERT_EQ(
      Value(old_.url(), "SELECT recovery_point FROM phasekey.idempotency_keys WHERE idempotency_key = 'in-flight'"),
      "ride_created");

  FenceAndCopy(bucket, old_.url(), new_server_.url());
  ASSERT_EQ(copied_keys_, 1);
  map[bucket] = new_server_.url();

  // The stale holder goes on: the charge is made, and its fenced move on the
  // old server is refused. Nothing it wrote lands there.
  go_on.set_value();
  const Reply refused = stale.get();
  EXPECT_NE(refused.kind, Reply::Kind::kCompleted) << refused.detail;
  EXPECT_EQ(gateway_.calls(), 1) << "the stale holder did reach the provider";
  EXPECT_EQ(Value(old_.url(),
                  "SELECT recovery_point || ' ' || coalesce(owner_token::text, 'no holder') FROM "
                  "phasekey.idempotency_keys WHERE idempotency_key = 'in-flight'"),
            "ride_created no holder")
      << "the fence let the stale holder's write through";
  EXPECT_EQ(Value(old_.url(), "SELECT count(*) FROM rides WHERE charge_id IS NOT NULL"), "0");

  DropBucket(bucket, old_.url());

  // On the new server the key is free and due: the re-drive worker takes it
  // at ride_created and finishes it, sending the charge again under the same
  // provider key.
  RedriveOptions ro;
  ro.listen = false;
  auto worker = RedriveWorker::Open(on_new.get(), ro);
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->claimed, 1u);
  EXPECT_EQ(round->finished, 1u);
  EXPECT_EQ(Value(new_server_.url(), "SELECT state FROM phasekey.idempotency_keys WHERE idempotency_key = 'in-flight'"),
            "finished");
  EXPECT_EQ(gateway_.calls(), 2);
  EXPECT_EQ(gateway_.charges(), 1) << "charged once: the provider key moved with the row";
  EXPECT_EQ(Value(new_server_.url(), "SELECT count(*) FROM rides WHERE charge_id IS NOT NULL"), "1");
  const Reply replay = on_new->Execute("create_ride", request);
  EXPECT_EQ(replay.kind, Reply::Kind::kReplayed);
  EXPECT_EQ(replay.response.status, 201);

  // A process still routing by the old map cannot make the key again there;
  // the old server's other buckets work as before.
  EXPECT_EQ(
      Value(old_.url(), "SELECT count(*) FROM phasekey.idempotency_keys WHERE bucket = " + std::to_string(bucket)),
      "0");
  const Reply by_old_map = on_old->Execute("create_ride", Request{kMoving, "after-move", "POST", "/rides", kBody});
  EXPECT_NE(by_old_map.kind, Reply::Kind::kCompleted) << "the moved bucket took a claim on the old server";
  EXPECT_EQ(
      Value(old_.url(), "SELECT count(*) FROM phasekey.idempotency_keys WHERE bucket = " + std::to_string(bucket)),
      "0");
  EXPECT_EQ(on_old->Execute("create_ride", Request{kStaying, "stays", "POST", "/rides", kBody}).kind,
            Reply::Kind::kCompleted);
}

}  // namespace
}  // namespace phasekey
