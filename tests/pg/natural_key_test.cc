// Flows keyed by the request itself (KeySource in phasekey/flow.h) against a
// real PostgreSQL: the claim, replay, mismatch, races and re-drive work as
// with a header key; bad or missing values are refused before any row.
#include <gtest/gtest.h>

#include <future>
#include <pqxx/pqxx>
#include <thread>

#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;
using testing::TestGateway;
using Kind = Reply::Kind;

constexpr char kBooking[] = "book_ride";
constexpr char kBookingAt[] = "book_ride_at";

std::string Body(const std::string& reference, double origin_lat = 1.5) {
  return nlohmann::json{{"booking_reference", reference}, {"origin_lat", origin_lat}, {"target_lat", 3}}.dump();
}

class NaturalKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CreateRideTables(db_.url());
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 16;
    o.lease = milliseconds(10000);
    o.backoff_base = milliseconds(2);
    o.backoff_cap = milliseconds(5);
    o.redrive_delay = milliseconds(1);
    auto hooks = std::make_shared<testing::RideHooks>();
    auto r = Runner::Open(
        o, {testing::MakeRideFlow(&gateway_, milliseconds(2000), hooks, kBooking,
                                  KeySource::BodyField("/booking_reference")),
            testing::MakeRideFlow(&gateway_, milliseconds(2000), hooks, kBookingAt, KeySource::PathParameter("ref"))});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
  }

  Reply Book(const std::string& body, const std::string& account = "acct_1", const std::string& header_key = "") {
    return runner_->Execute(kBooking, Request{account, header_key, "POST", "/bookings", body, {}});
  }

  std::string Value(const std::string& sql) const { return db_.Value(sql); }

  TestDatabase db_;
  TestGateway gateway_;
  std::unique_ptr<Runner> runner_;
};

TEST_F(NaturalKeyTest, TheBookingReferenceInTheBodyIsTheKey) {
  Reply r = Book(Body("BK-1"));
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(Value("SELECT idempotency_key FROM phasekey.idempotency_keys"), "book_ride:BK-1");
  EXPECT_EQ(Value("SELECT idem_key FROM rides"), "book_ride:BK-1");
  EXPECT_EQ(gateway_.charges(), 1);
}

TEST_F(NaturalKeyTest, ARetryWithTheSameReferenceReplaysWithoutRunningAgain) {
  Reply first = Book(Body("BK-2"));
  ASSERT_EQ(first.kind, Kind::kCompleted) << first.detail;
  Reply again = Book(R"({"target_lat": 3.0, "origin_lat": 15e-1, "booking_reference": "BK-2"})");
  ASSERT_EQ(again.kind, Kind::kReplayed) << again.detail;
  EXPECT_EQ(again.response.body, first.response.body);
  EXPECT_EQ(gateway_.calls(), 1);
  EXPECT_EQ(Value("SELECT count(*) FROM rides"), "1");
}

TEST_F(NaturalKeyTest, TheSameReferenceWithADifferentBodyIsAMismatch) {
  ASSERT_EQ(Book(Body("BK-3")).kind, Kind::kCompleted);
  Reply other = Book(Body("BK-3", 7));
  EXPECT_EQ(other.kind, Kind::kMismatch);
  EXPECT_EQ(other.detail, "It was first used with a different request body.");
  EXPECT_EQ(gateway_.charges(), 1);
}

TEST_F(NaturalKeyTest, SixtyFourThreadsRacingOnOneReferenceChargeOnce) {
  constexpr int kThreads = 64;
  std::promise<void> go;
  auto start = go.get_future().share();
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < kThreads; ++i) {
    replies.push_back(std::async(std::launch::async, [&, start] {
      start.wait();
      return Book(Body("BK-race"));
    }));
  }
  go.set_value();
  int completed = 0, replayed = 0, busy = 0;
  for (auto& f : replies) {
    const Kind k = f.get().kind;
    completed += k == Kind::kCompleted;
    replayed += k == Kind::kReplayed;
    busy += k == Kind::kInProgress;
  }
  EXPECT_EQ(completed, 1);
  EXPECT_EQ(completed + replayed + busy, kThreads);
  EXPECT_EQ(gateway_.calls(), 1);
  EXPECT_EQ(Value("SELECT count(*) FROM rides"), "1");
}

TEST_F(NaturalKeyTest, AnAbsentOrUnusableReferenceIsRefusedBeforeAnyKeyIsRecorded) {
  const std::string too_long(255 - std::string(kBooking).size(), 'r');  // one over the limit
  for (const std::string& body :
       {std::string(R"({"origin_lat": 1})"), std::string(R"({"booking_reference": ""})"),
        std::string(R"({"booking_reference": 1.5})"), std::string(R"({"booking_reference": {"a": 1}})"),
        std::string(R"({"booking_reference": "a\u0001b"})"), std::string(R"([1, 2])"), Body(too_long)}) {
    Reply r = Book(body);
    EXPECT_EQ(r.kind, Kind::kInvalidRequest) << body;
    EXPECT_NE(r.detail.find("/booking_reference"), std::string::npos) << r.detail;
  }
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys"), "0");
  EXPECT_EQ(Book(Body(too_long.substr(1))).kind, Kind::kCompleted) << "the longest reference fits";
}

TEST_F(NaturalKeyTest, AnIntegerReferenceIsAKeyToo) {
  ASSERT_EQ(Book(R"({"booking_reference": 90210})").kind, Kind::kCompleted);
  EXPECT_EQ(Value("SELECT idempotency_key FROM phasekey.idempotency_keys"), "book_ride:90210");
}

TEST_F(NaturalKeyTest, ARequestThatAlsoSendsAnIdempotencyKeyIsRefused) {
  Reply r = Book(Body("BK-4"), "acct_1", "client-key");
  EXPECT_EQ(r.kind, Kind::kInvalidRequest);
  EXPECT_NE(r.detail.find("send no Idempotency-Key"), std::string::npos) << r.detail;
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys"), "0");
}

TEST_F(NaturalKeyTest, APathParameterIsTheKeyWhenTheFlowSaysSo) {
  Request rq{"acct_1", "", "PUT", "/bookings/BK-5", R"({"origin_lat": 2})", {{"ref", "BK-5"}}};
  ASSERT_EQ(runner_->Execute(kBookingAt, rq).kind, Kind::kCompleted);
  EXPECT_EQ(runner_->Execute(kBookingAt, rq).kind, Kind::kReplayed);
  rq.path_parameters.clear();
  EXPECT_EQ(runner_->Execute(kBookingAt, rq).kind, Kind::kInvalidRequest);
  EXPECT_EQ(Value("SELECT idempotency_key FROM phasekey.idempotency_keys"), "book_ride_at:BK-5");
  EXPECT_EQ(gateway_.charges(), 1);
}

TEST_F(NaturalKeyTest, TheSameValueInTwoFlowsOrTwoAccountsIsTwoOperations) {
  ASSERT_EQ(Book(Body("BK-6")).kind, Kind::kCompleted);
  ASSERT_EQ(Book(Body("BK-6"), "acct_2").kind, Kind::kCompleted);
  Request at{"acct_1", "", "PUT", "/bookings/BK-6", Body("BK-6"), {{"ref", "BK-6"}}};
  ASSERT_EQ(runner_->Execute(kBookingAt, at).kind, Kind::kCompleted);
  EXPECT_EQ(gateway_.charges(), 3);
}

TEST_F(NaturalKeyTest, TheRedriveWorkerFinishesAnAbandonedBookingUnderItsStoredKey) {
  gateway_.fail_retryable = 1000;
  ASSERT_EQ(Book(Body("BK-7")).kind, Kind::kRetryLater);
  gateway_.fail_retryable = 0;
  std::this_thread::sleep_for(milliseconds(20));  // the next attempt time passes
  RedriveOptions wo;
  wo.poll_interval = milliseconds(50);
  auto worker = RedriveWorker::Open(runner_.get(), wo);
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->finished, 1u);
  EXPECT_EQ(gateway_.charges(), 1);
  EXPECT_EQ(Book(Body("BK-7")).kind, Kind::kReplayed);
}

}  // namespace
}  // namespace phasekey
