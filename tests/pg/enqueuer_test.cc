#include "phasekey/workers.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <pqxx/pqxx>
#include <set>

#include "pg/pool.h"
#include "phasekey/staged_job.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

class CollectingSink : public JobSink {
 public:
  Status Deliver(const std::vector<StagedJob>& jobs) override {
    std::lock_guard lock(mu_);
    ++calls_;
    if (fail_next_ > 0) {
      --fail_next_;
      return Status::Retryable("sink is down");
    }
    for (const auto& j : jobs) {
      ids_.insert(j.id);
      ++deliveries_;
      last_ = j;
    }
    return Status::OK();
  }
  std::mutex mu_;
  std::set<std::int64_t> ids_;
  int deliveries_ = 0, calls_ = 0, fail_next_ = 0;
  StagedJob last_;
};

class EnqueuerTest : public ::testing::Test {
 protected:
  void StageThroughThePool(int n) {
    DatabaseOptions o;
    o.url = db_.url();
    auto pool = pg::Pool::Open(o);
    ASSERT_TRUE(pool.has_value());
    ASSERT_TRUE((*pool)
                    ->Transact([&](pqxx::transaction_base& tx) {
                      for (int i = 0; i < n; ++i) StageJob(tx, 0, "send_ride_receipt", {{"n", i}});
                    })
                    .ok());
  }
  int Staged() {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    return tx.exec1("SELECT count(*) FROM phasekey.staged_jobs")[0].as<int>();
  }
  std::unique_ptr<Enqueuer> Open(JobSink* sink, std::size_t batch = 100) {
    DatabaseOptions o;
    o.url = db_.url();
    EnqueuerOptions e;
    e.batch_size = batch;
    auto q = Enqueuer::Open(o, e, sink);
    EXPECT_TRUE(q.has_value()) << q.error().ToString();
    return std::move(*q);
  }
  TestDatabase db_;
};

TEST_F(EnqueuerTest, DeliversFifteenHundredStagedJobsAndDeletesOnlyThose) {
  StageThroughThePool(1500);
  CollectingSink sink;
  auto q = Open(&sink, 1000);
  auto first = q->RunOnce();
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(*first, 1000u);
  EXPECT_EQ(Staged(), 500) << "Leach's enqueuer deleted all 1,500 here";
  EXPECT_EQ(*q->RunOnce(), 500u);
  EXPECT_EQ(*q->RunOnce(), 0u);
  EXPECT_EQ(sink.ids_.size(), 1500u);
  EXPECT_EQ(sink.deliveries_, 1500);
  EXPECT_EQ(sink.last_.name, "send_ride_receipt");
  EXPECT_EQ(Staged(), 0);
}

TEST_F(EnqueuerTest, ASinkFailureLosesNoJob) {
  StageThroughThePool(250);
  CollectingSink sink;
  sink.fail_next_ = 1;
  auto q = Open(&sink, 100);
  auto failed = q->RunOnce();
  ASSERT_FALSE(failed.has_value());
  EXPECT_TRUE(failed.error().IsRetryable()) << failed.error().ToString();
  EXPECT_EQ(Staged(), 250);
  while (*q->RunOnce() > 0) {
  }
  EXPECT_EQ(sink.ids_.size(), 250u);
  EXPECT_EQ(Staged(), 0);
}

TEST_F(EnqueuerTest, SeveralEnqueuersShareTheTableWithoutDuplicates) {
  StageThroughThePool(1200);
  CollectingSink sink;
  std::vector<std::future<void>> runs;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(std::async(std::launch::async, [&] {
      auto q = Open(&sink, 50);
      while (true) {
        auto n = q->RunOnce();
        if (!n || *n == 0) break;
      }
    }));
  }
  for (auto& r : runs) r.get();
  EXPECT_EQ(sink.deliveries_, 1200) << "each job handed on exactly once";
  EXPECT_EQ(sink.ids_.size(), 1200u);
  EXPECT_EQ(Staged(), 0);
}

TEST_F(EnqueuerTest, AJobStagedInARolledBackTransactionNeverExists) {
  DatabaseOptions o;
  o.url = db_.url();
  auto pool = pg::Pool::Open(o);
  ASSERT_TRUE(pool.has_value());
  Status s = (*pool)->Transact([&](pqxx::transaction_base& tx) {
    StageJob(tx, 0, "x", {});
    throw std::runtime_error("phase failed");
  });
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(Staged(), 0);
}

}  // namespace
}  // namespace phasekey
