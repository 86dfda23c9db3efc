// A replay (and a mismatch) of a finished key writes nothing: no row, no
// identity value, no row lock, against a real PostgreSQL. A finished key is
// immutable until the reaper deletes it, so answering it is a read.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "phasekey/runner.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;
using testing::TestGateway;

const std::string kBody = R"({"origin_lat": 1.5})";

class ReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CreateRideTables(db_.url());
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 4;
    auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway_, milliseconds(2000))});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
  }
  Reply Post(const std::string& key, const std::string& body = kBody) {
    return runner_->Execute("create_ride", Request{"acct", key, "POST", "/rides", body});
  }
  // The identity's last value: every INSERT attempt that formed a row drew one.
  std::string IdentityDrawn() {
    return db_.Value(
        "SELECT coalesce(last_value, 0) FROM pg_sequences WHERE schemaname = 'phasekey' "
        "AND sequencename = 'idempotency_keys_id_seq'");
  }
  // The row's version and lock word: an update or a FOR UPDATE changes them.
  std::string RowVersion() {
    return db_.Value("SELECT xmin::text || '/' || xmax::text FROM phasekey.idempotency_keys");
  }

  TestDatabase db_;
  TestGateway gateway_;
  std::unique_ptr<Runner> runner_;
};

TEST_F(ReplayTest, ReplaysAndMismatchesOfAFinishedKeyWriteNothing) {
  ASSERT_EQ(Post("k-1").kind, Reply::Kind::kCompleted);
  const std::string drawn = IdentityDrawn(), version = RowVersion();
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(Post("k-1").kind, Reply::Kind::kReplayed);
    ASSERT_EQ(Post("k-1", R"({"origin_lat": 2.5})").kind, Reply::Kind::kMismatch);
  }
  EXPECT_EQ(IdentityDrawn(), drawn) << "no identity value drawn by 100 answers";
  EXPECT_EQ(RowVersion(), version) << "the row was neither updated nor locked";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys"), "1");
  EXPECT_EQ(gateway_.charges(), 1);
}

TEST_F(ReplayTest, AReplayDoesNotWaitForAHolderOfTheRowLock) {
  ASSERT_EQ(Post("k-2").kind, Reply::Kind::kCompleted);
  pqxx::connection other(db_.url());
  pqxx::work hold(other);
  hold.exec1("SELECT 1 FROM phasekey.idempotency_keys WHERE idempotency_key = 'k-2' FOR UPDATE");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(Post("k-2").kind, Reply::Kind::kReplayed);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2)) << "answered without the lock";
  hold.abort();
}

}  // namespace
}  // namespace phasekey
