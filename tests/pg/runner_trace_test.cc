// The runner and the W3C traceparent (Request::traceparent) against a real
// PostgreSQL: the claim that creates a key stores it, whichever statement
// writes the row; a later request with the same key keeps it and logs its
// own beside it; an invalid one is ignored; phases see the stored one; every
// log line about the key carries its trace id.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "phasekey/runner.h"
#include "support/ride_flow.h"
#include "support/stderr_capture.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::StderrCapture;
using testing::TestDatabase;
using testing::TestGateway;
using Kind = Reply::Kind;

const std::string kBody = R"({"origin_lat": 1.5, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";
const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParent = "00f067aa0ba902b7";
const std::string kTraceParent = "00-" + kTrace + "-" + kParent + "-01";
const std::string kOtherTrace = "0af7651916cd43dd8448eb211c80319c";
const std::string kOtherParent = "b7ad6b7169203331";
const std::string kOtherTraceParent = "00-" + kOtherTrace + "-" + kOtherParent + "-00";

class RunnerTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CreateRideTables(db_.url());
    hooks_ = std::make_shared<testing::RideHooks>();
    hooks_->in_create_ride = [this](AtomicContext& ctx) { seen_.push_back(ctx.traceparent()); };
    hooks_->in_send_receipt = [this](AtomicContext& ctx) { seen_.push_back(ctx.traceparent()); };
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 4;
    o.lease = milliseconds(10000);
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    o.log_requests = true;
    auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway_, milliseconds(2000), hooks_)});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
  }

  Reply Post(const std::string& key, const std::string& traceparent) {
    Request request{"acct_1", key, "POST", "/rides", kBody};
    request.traceparent = traceparent;
    return runner_->Execute("create_ride", request);
  }

  std::string StoredTraceParent(const std::string& key) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    auto f = tx.exec_params1("SELECT trace_parent FROM phasekey.idempotency_keys WHERE idempotency_key = $1", key)[0];
    return f.is_null() ? "<null>" : f.as<std::string>();
  }

  TestDatabase db_;
  TestGateway gateway_;
  std::shared_ptr<testing::RideHooks> hooks_;
  std::vector<std::string> seen_;  // ctx.traceparent() in each atomic phase run
  std::unique_ptr<Runner> runner_;
};

TEST_F(RunnerTraceTest, TheClaimThatCreatesAKeyStoresItsTraceparentAndItsLogLineCarriesTheTraceId) {
  StderrCapture log;
  ASSERT_EQ(Post("k-traced", " " + kTraceParent + "\t").kind, Kind::kCompleted);
  EXPECT_EQ(StoredTraceParent("k-traced"), kTraceParent);
  const auto lines = log.lines("request");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].value("trace_id", ""), kTrace);
  EXPECT_EQ(lines[0].value("parent_id", ""), kParent);
  EXPECT_FALSE(lines[0].contains("retry_trace_id")) << lines[0].dump();
  EXPECT_EQ(seen_, (std::vector<std::string>{kTraceParent, kTraceParent})) << "both atomic phases see it";
}

TEST_F(RunnerTraceTest, ALaterVersionsTraceparentIsStoredInVersion00Form) {
  ASSERT_EQ(Post("k-future", "cc-" + kTrace + "-" + kParent + "-01-what-the-future-will-be-like").kind,
            Kind::kCompleted);
  EXPECT_EQ(StoredTraceParent("k-future"), kTraceParent);
}

TEST_F(RunnerTraceTest, AKeyRecordedWithoutItsFirstPhaseStoresItsTraceparentToo) {
  // The first phase fails every attempt: the claim then records the key
  // alone (KeyClaim), not with the phase's move (KeyClaimMoved).
  hooks_->in_create_ride = [](AtomicContext&) { throw std::runtime_error("create_ride bug"); };
  ASSERT_EQ(Post("k-alone", kTraceParent).kind, Kind::kRetryLater);
  EXPECT_EQ(StoredTraceParent("k-alone"), kTraceParent);
}

TEST_F(RunnerTraceTest, ARetryWithAnotherTraceparentKeepsTheFirstAndLogsItsOwnAsTheRetrys) {
  ASSERT_EQ(Post("k-retried", kTraceParent).kind, Kind::kCompleted);
  StderrCapture log;
  ASSERT_EQ(Post("k-retried", kOtherTraceParent).kind, Kind::kReplayed);
  EXPECT_EQ(StoredTraceParent("k-retried"), kTraceParent);
  const auto lines = log.lines("request");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].value("trace_id", ""), kTrace) << "the key's life is its first request's trace";
  EXPECT_EQ(lines[0].value("retry_trace_id", ""), kOtherTrace);
  EXPECT_EQ(lines[0].value("retry_parent_id", ""), kOtherParent);
}

TEST_F(RunnerTraceTest, ARetryWithTheSameTraceparentLogsNoRetryTraceId) {
  ASSERT_EQ(Post("k-same", kTraceParent).kind, Kind::kCompleted);
  StderrCapture log;
  ASSERT_EQ(Post("k-same", kTraceParent).kind, Kind::kReplayed);
  const auto lines = log.lines("request");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].value("trace_id", ""), kTrace);
  EXPECT_FALSE(lines[0].contains("retry_trace_id")) << lines[0].dump();
}

TEST_F(RunnerTraceTest, AnInvalidTraceparentIsIgnoredAndTheRequestSucceeds) {
  StderrCapture log;
  ASSERT_EQ(Post("k-invalid", "00-" + std::string(32, '0') + "-" + kParent + "-01").kind, Kind::kCompleted);
  EXPECT_EQ(StoredTraceParent("k-invalid"), "<null>");
  const auto lines = log.lines("request");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].contains("trace_id")) << lines[0].dump();
  EXPECT_FALSE(lines[0].contains("retry_trace_id")) << lines[0].dump();
  EXPECT_EQ(seen_, (std::vector<std::string>{"", ""}));
}

TEST_F(RunnerTraceTest, AKeyWithoutATraceparentGetsNoneFromARetryThatBringsOne) {
  ASSERT_EQ(Post("k-none", "").kind, Kind::kCompleted);
  StderrCapture log;
  ASSERT_EQ(Post("k-none", kTraceParent).kind, Kind::kReplayed);
  EXPECT_EQ(StoredTraceParent("k-none"), "<null>");
  const auto lines = log.lines("request");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].contains("trace_id")) << lines[0].dump();
  EXPECT_EQ(lines[0].value("retry_trace_id", ""), kTrace);
}

TEST_F(RunnerTraceTest, AKeyParkedAtTheCapLogsItsTraceId) {
  RunnerOptions o = runner_->options();
  o.max_attempts = 1;
  auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway_, milliseconds(2000), hooks_)});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  gateway_.throw_next = 100;  // the charge may have been sent: parked, never a stored 500
  StderrCapture log;
  Request request{"acct_1", "k-stopped", "POST", "/rides", kBody};
  request.traceparent = kTraceParent;
  EXPECT_EQ((*r)->Execute("create_ride", request).kind, Kind::kNeedsOperator);
  const auto stopped = log.lines("key stopped");
  ASSERT_EQ(stopped.size(), 1u) << "the key is parked at its first unclassified failure";
  EXPECT_EQ(stopped[0].value("trace_id", ""), kTrace);
  EXPECT_EQ(stopped[0].value("parent_id", ""), kParent);
}

}  // namespace
}  // namespace phasekey
