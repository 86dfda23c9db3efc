// POST /bookings over real HTTP: a ride booked by the client's own booking
// reference, with no Idempotency-Key (the book_ride flow takes its key from
// the body's /booking_reference). Retries replay, a reference reused with
// another ride is refused, racing clients charge once, and requests the
// natural key cannot serve get a 400 problem before anything is recorded.
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::HttpCall;
using testing::HttpResult;
using testing::RideWorld;

std::string Booking(const std::string& reference, double origin_lat = 1) {
  return nlohmann::json{{"booking_reference", reference},
                        {"origin_lat", origin_lat},
                        {"origin_lon", 2},
                        {"target_lat", 3},
                        {"target_lon", 4}}
      .dump();
}

class BookingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RideWorldOptions o{.database_url = db_.url()};
    world_ = std::make_unique<RideWorld>(o);
    service_ = world_->StartService(&port_);
    ASSERT_NE(port_, 0);
  }

  HttpResult Book(const std::string& body, std::vector<std::pair<std::string, std::string>> extra = {}) {
    std::vector<std::pair<std::string, std::string>> headers = {{"Authorization", "Bearer tok_user_1"},
                                                                {"Content-Type", "application/json"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    return HttpCall(port_, "POST", "/bookings", headers, body);
  }

  std::string ProblemType(const HttpResult& r) {
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("type") ? j["type"].get<std::string>() : "<none>";
  }

  testing::TestDatabase db_;
  std::unique_ptr<RideWorld> world_;
  std::unique_ptr<testing::ChildProcess> service_;
  std::uint16_t port_ = 0;
};

TEST_F(BookingsTest, ABookingWithoutAKeyHeaderIsChargedOnceAndItsRetryReplays) {
  HttpResult first = Book(Booking("BK-1001"));
  ASSERT_EQ(first.status, 201) << first.body;
  HttpResult again = Book(Booking("BK-1001"));
  ASSERT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.Header("idempotent-replayed"), "true");
  EXPECT_EQ(world_->Ledger().size(), 1u);
  EXPECT_EQ(world_->Value("SELECT idempotency_key FROM rides"), "book_ride:BK-1001");
}

TEST_F(BookingsTest, AReferenceReusedForAnotherRideIsRefusedWith422) {
  ASSERT_EQ(Book(Booking("BK-1002")).status, 201);
  HttpResult other = Book(Booking("BK-1002", 45));
  EXPECT_EQ(other.status, 422) << other.body;
  EXPECT_NE(ProblemType(other).find("#key-reused"), std::string::npos) << other.body;
  EXPECT_EQ(world_->Ledger().size(), 1u);
}

TEST_F(BookingsTest, ClientsRacingWithOneReferenceGetOneRideAndOneCharge) {
  constexpr int kClients = 16;
  std::vector<std::future<HttpResult>> answers;
  for (int i = 0; i < kClients; ++i) {
    answers.push_back(std::async(std::launch::async, [&] { return Book(Booking("BK-race")); }));
  }
  int created = 0;
  std::string body;
  for (auto& a : answers) {
    HttpResult r = a.get();
    ASSERT_TRUE(r.status == 201 || r.status == 409) << r.status << " " << r.body;
    if (r.status != 201) continue;
    ++created;
    if (body.empty()) body = r.body;
    EXPECT_EQ(r.body, body) << "every 201 is the one stored response";
  }
  EXPECT_GE(created, 1);
  EXPECT_EQ(world_->Ledger().size(), 1u);
  EXPECT_EQ(world_->Value("SELECT count(*) FROM rides"), "1");
}

TEST_F(BookingsTest, AMissingReferenceOrAKeyHeaderGets400AndRecordsNothing) {
  HttpResult missing = Book(testing::kRideBody);
  EXPECT_EQ(missing.status, 400) << missing.body;
  EXPECT_NE(missing.body.find("/booking_reference is missing"), std::string::npos) << missing.body;
  HttpResult number = Book(R"({"booking_reference": 1.5, "origin_lat": 1, "origin_lon": 2, "target_lat": 3,
                              "target_lon": 4})");
  EXPECT_EQ(number.status, 400) << number.body;
  HttpResult header = Book(Booking("BK-1003"), {{"Idempotency-Key", "k-1003"}});
  EXPECT_EQ(header.status, 400) << header.body;
  EXPECT_NE(ProblemType(header).find("#key-invalid"), std::string::npos) << header.body;
  EXPECT_EQ(world_->Value("SELECT count(*) FROM phasekey.idempotency_keys"), "0");
  EXPECT_TRUE(world_->Ledger().empty());
}

TEST_F(BookingsTest, TheSameReferenceAsAnIdempotencyKeyOnRidesIsAnotherOperation) {
  ASSERT_EQ(Book(Booking("BK-1004")).status, 201);
  HttpResult ride = world_->PostRide(port_, 1, "BK-1004");
  EXPECT_EQ(ride.status, 201) << ride.body;
  EXPECT_EQ(world_->Ledger().size(), 2u);
}

}  // namespace
}  // namespace phasekey
