// Flow versions: the graph's fingerprint, the older points a new version
// declares (Renamed, Retired), and what the engine derives from the graph
// for the failure cap (BeforeAnyForeignPhase). No database.
#include <gtest/gtest.h>

#include "phasekey/flow.h"

namespace phasekey {
namespace {

using std::chrono::seconds;

constexpr RecoveryPoint kRideCreated{"ride_created"};
constexpr RecoveryPoint kRideBooked{"ride_booked"};
constexpr RecoveryPoint kChargeCreated{"charge_created"};
constexpr RecoveryPoint kReceiptDue{"receipt_due"};
constexpr RecoveryPoint kAudited{"audited"};

PhaseResult Noop(AtomicContext&) { return Respond{Response{}}; }
PhaseResult NoopForeign(const PhaseContext&) { return Respond{Response{}}; }

// v1: started -create_ride-> ride_created -charge-> charge_created -send_receipt-> finished
Flow::Builder V1() {
  Flow::Builder b("create_ride");
  b.Atomic(kStarted, "create_ride", Noop, {kRideCreated})
      .Foreign(kRideCreated, "charge", NoopForeign, {kChargeCreated}, seconds(10))
      .Atomic(kChargeCreated, "send_receipt", Noop, {kFinished});
  return b;
}

// v2: ride_created renamed ride_booked, charge_created replaced by receipt_due.
Flow::Builder V2() {
  Flow::Builder b("create_ride");
  b.Atomic(kStarted, "create_ride", Noop, {kRideBooked})
      .Foreign(kRideBooked, "charge", NoopForeign, {kReceiptDue}, seconds(10))
      .Atomic(kReceiptDue, "send_receipt", Noop, {kFinished});
  return b;
}

std::shared_ptr<const Flow> Built(Flow::Builder b) {
  auto flow = b.Build();
  EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
  return flow ? *flow : nullptr;
}

std::string BuildError(Flow::Builder b) {
  auto flow = b.Build();
  return flow ? "" : flow.error().message();
}

TEST(FlowVersionsTest, TheVersionIsTheGraphsShapeAndNothingElse) {
  const auto v1 = Built(V1());
  EXPECT_EQ(v1->version().size(), 16u);
  EXPECT_EQ(v1->version(), Built(V1())->version()) << "the same graph twice";
  EXPECT_NE(v1->version(), Built(V2())->version()) << "points renamed";
  // Older points and timeouts change no key's path.
  EXPECT_EQ(Built(V2())->version(), Built(V2().Renamed(kRideCreated, kRideBooked))->version());
  Flow::Builder slower("create_ride");
  slower.Atomic(kStarted, "create_ride", Noop, {kRideCreated})
      .Foreign(kRideCreated, "charge", NoopForeign, {kChargeCreated}, seconds(20))
      .Atomic(kChargeCreated, "send_receipt", Noop, {kFinished});
  EXPECT_EQ(v1->version(), Built(std::move(slower))->version());
  // A phase that changes kind changes the version.
  Flow::Builder kinds("create_ride");
  kinds.Atomic(kStarted, "create_ride", Noop, {kRideCreated})
      .Atomic(kRideCreated, "charge", Noop, {kChargeCreated})
      .Atomic(kChargeCreated, "send_receipt", Noop, {kFinished});
  EXPECT_NE(v1->version(), Built(std::move(kinds))->version());
}

TEST(FlowVersionsTest, ResolvesCurrentMappedRetiredAndUnknownPoints) {
  const auto v2 = Built(V2().Renamed(kRideCreated, kRideBooked)
                            .Retired(kChargeCreated, Retirement::ResumeAt(kReceiptDue))
                            .Retired(kAudited, Retirement::StopForOperator()));
  EXPECT_EQ(v2->Resolve("ride_booked").kind, PointResolution::Kind::kCurrent);
  EXPECT_EQ(v2->Resolve("finished").kind, PointResolution::Kind::kCurrent);
  EXPECT_EQ(v2->Resolve("ride_created").kind, PointResolution::Kind::kMapped);
  EXPECT_EQ(v2->Resolve("ride_created").resume_at, "ride_booked");
  EXPECT_EQ(v2->Resolve("charge_created").resume_at, "receipt_due");
  EXPECT_EQ(v2->Resolve("audited").kind, PointResolution::Kind::kForOperator);
  EXPECT_EQ(v2->Resolve("elsewhere").kind, PointResolution::Kind::kUnknown);
  EXPECT_EQ(Built(V2())->Resolve("ride_created").kind, PointResolution::Kind::kUnknown);
  const std::vector<std::string> known = {"audited",     "charge_created", "finished", "receipt_due",
                                          "ride_booked", "ride_created",   "started"};
  EXPECT_EQ(v2->KnownPoints(), known);
  EXPECT_EQ(v2->renamed().at("ride_created"), "ride_booked");
}

TEST(FlowVersionsTest, DescribesItselfForAToolWithoutItsPhases) {
  const auto v2 = Built(V2().Renamed(kRideCreated, kRideBooked).Retired(kAudited, Retirement::StopForOperator()));
  const nlohmann::json d = v2->Describe();
  EXPECT_EQ(d["name"], "create_ride");
  EXPECT_EQ(d["version"], v2->version());
  EXPECT_EQ(d["points"], nlohmann::json({"finished", "started", "ride_booked", "receipt_due"}));
  EXPECT_EQ(d["renamed"], nlohmann::json({{"ride_created", "ride_booked"}}));
  EXPECT_TRUE(d["retired"]["audited"].is_null());
}

TEST(FlowVersionsTest, RefusesOlderPointsThatCannotBeHonoured) {
  EXPECT_NE(BuildError(V2().Renamed(kRideBooked, kReceiptDue)).find("is a point of this graph"), std::string::npos);
  EXPECT_NE(BuildError(V2().Retired(kStarted, Retirement::StopForOperator())).find("is a point of this graph"),
            std::string::npos);
  EXPECT_NE(BuildError(V2().Renamed(kRideCreated, kChargeCreated)).find("not a point of this graph"),
            std::string::npos);
  EXPECT_NE(BuildError(V2().Retired(kChargeCreated, Retirement::ResumeAt(kFinished))).find("not a point of this graph"),
            std::string::npos);
  EXPECT_NE(BuildError(V2().Renamed(kRideCreated, kRideBooked).Retired(kRideCreated, Retirement::StopForOperator()))
                .find("declared twice"),
            std::string::npos);
  EXPECT_NE(BuildError(V2().Retired(RecoveryPoint("Bad-Name"), Retirement::StopForOperator())).find("invalid"),
            std::string::npos);
}

TEST(FlowVersionsTest, OnlyPointsNoForeignPhaseLeadsToAreFreeOfExternalEffects) {
  const auto v1 = Built(V1());
  EXPECT_TRUE(v1->BeforeAnyForeignPhase("started"));
  EXPECT_FALSE(v1->BeforeAnyForeignPhase("ride_created")) << "the foreign phase's own point: it may have called";
  EXPECT_FALSE(v1->BeforeAnyForeignPhase("charge_created"));
  EXPECT_FALSE(v1->BeforeAnyForeignPhase("finished"));
  // A point reached both before and after a foreign phase is not free.
  Flow::Builder loop("loop");
  loop.Atomic(kStarted, "prepare", Noop, {kAudited})
      .Atomic(kAudited, "audit", Noop, {kRideCreated, kFinished})
      .Foreign(kRideCreated, "charge", NoopForeign, {kAudited}, seconds(10));
  const auto looped = Built(std::move(loop));
  EXPECT_TRUE(looped->BeforeAnyForeignPhase("started"));
  EXPECT_FALSE(looped->BeforeAnyForeignPhase("audited"));
}

}  // namespace
}  // namespace phasekey
