#include "phasekey/flow.h"

#include <gtest/gtest.h>

namespace phasekey {
namespace {

using std::chrono::seconds;

constexpr RecoveryPoint kRideCreated{"ride_created"};
constexpr RecoveryPoint kChargeCreated{"charge_created"};
constexpr RecoveryPoint kNowhere{"nowhere"};

PhaseResult Noop(AtomicContext&) { return Respond{Response{}}; }
PhaseResult NoopForeign(const PhaseContext&) { return Respond{Response{}}; }

Flow::Builder RideFlow() {
  Flow::Builder b("create_ride");
  b.Atomic(kStarted, "create_ride", Noop, {kRideCreated})
      .Foreign(kRideCreated, "charge", NoopForeign, {kChargeCreated}, seconds(10))
      .Atomic(kChargeCreated, "send_receipt", Noop, {kFinished});
  return b;
}

std::string BuildError(Flow::Builder b) {
  auto flow = b.Build();
  return flow ? "" : flow.error().message();
}

TEST(FlowTest, TakesItsKeyFromTheHeaderUnlessItDeclaresANaturalKey) {
  EXPECT_EQ((*RideFlow().Build())->key_source().kind(), KeySource::Kind::kHeader);
  auto flow = RideFlow().KeyFrom(KeySource::BodyField("/order/number")).Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  EXPECT_TRUE((*flow)->key_source().natural());
  EXPECT_EQ((*flow)->key_source().Describe(), "the body's /order/number");
  EXPECT_EQ(KeySource::PathParameter("ref").Describe(), "the path's {ref}");
}

TEST(FlowTest, RefusesAKeySourceThatCannotNameAValue) {
  EXPECT_NE(BuildError(RideFlow().KeyFrom(KeySource::BodyField("order"))).find("not a JSON pointer"),
            std::string::npos);
  EXPECT_NE(BuildError(RideFlow().KeyFrom(KeySource::BodyField(""))).find("must name a member"), std::string::npos);
  EXPECT_NE(BuildError(RideFlow().KeyFrom(KeySource::PathParameter("Ref"))).find("invalid path parameter"),
            std::string::npos);
  EXPECT_NE(BuildError(RideFlow().KeyFrom(KeySource::PathParameter(""))).find("invalid path parameter"),
            std::string::npos);
}

TEST(FlowTest, BuildsLeachsRideFlow) {
  auto flow = RideFlow().Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  EXPECT_EQ((*flow)->name(), "create_ride");
  EXPECT_EQ((*flow)->Find("ride_created")->phase, "charge");
  EXPECT_EQ((*flow)->Find("finished"), nullptr);
  EXPECT_TRUE((*flow)->Declares("started", "ride_created"));
  EXPECT_FALSE((*flow)->Declares("started", "finished"));
  EXPECT_EQ((*flow)->LongestForeignTimeout(), seconds(10));
}

TEST(FlowTest, RefusesAFlowWithoutAnEntryPhase) {
  Flow::Builder b("f");
  b.Atomic(kRideCreated, "x", Noop, {kFinished});
  EXPECT_NE(BuildError(b).find("no phase at the entry point"), std::string::npos);
}

TEST(FlowTest, RefusesAnUnknownTarget) {
  Flow::Builder b("f");
  b.Atomic(kStarted, "x", Noop, {kNowhere});
  EXPECT_NE(BuildError(b).find("unknown recovery point 'nowhere'"), std::string::npos);
}

TEST(FlowTest, RefusesAnUnreachableNode) {
  Flow::Builder b("f");
  b.Atomic(kStarted, "x", Noop, {kFinished}).Atomic(kRideCreated, "y", Noop, {kFinished});
  EXPECT_NE(BuildError(b).find("'ride_created' is unreachable"), std::string::npos);
}

TEST(FlowTest, RefusesDuplicatePointsAndPhaseNames) {
  Flow::Builder b("f");
  b.Atomic(kStarted, "x", Noop, {kFinished}).Atomic(kStarted, "y", Noop, {kFinished});
  EXPECT_NE(BuildError(b).find("owns two phases"), std::string::npos);
  Flow::Builder c("f");
  c.Atomic(kStarted, "x", Noop, {kRideCreated}).Atomic(kRideCreated, "x", Noop, {kFinished});
  EXPECT_NE(BuildError(c).find("used twice"), std::string::npos);
}

TEST(FlowTest, RefusesAPhaseAtFinishedAndBadNames) {
  Flow::Builder b("f");
  b.Atomic(kStarted, "x", Noop, {kFinished}).Atomic(kFinished, "y", Noop, {kFinished});
  EXPECT_NE(BuildError(b).find("terminal"), std::string::npos);
  Flow::Builder c("f");
  c.Atomic(kStarted, "x", Noop, {RecoveryPoint{"Bad-Name"}});
  EXPECT_NE(BuildError(c).find("unknown recovery point"), std::string::npos);
  Flow::Builder d("f");
  d.Atomic(RecoveryPoint{"Bad-Name"}, "x", Noop, {kFinished});
  EXPECT_NE(BuildError(d).find("invalid recovery point name"), std::string::npos);
}

TEST(FlowTest, RefusesAFlowThatNeverResponds) {
  Flow::Builder b("f");
  b.Atomic(kStarted, "x", Noop, {kRideCreated}).Atomic(kRideCreated, "y", Noop, {kStarted});
  EXPECT_NE(BuildError(b).find("'finished' is unreachable"), std::string::npos);
}

TEST(FlowTest, RefusesAForeignPhaseWithoutATimeout) {
  Flow::Builder b("f");
  b.Foreign(kStarted, "x", NoopForeign, {kFinished}, seconds(0));
  EXPECT_NE(BuildError(b).find("positive timeout"), std::string::npos);
}

TEST(FlowTest, PrintsItselfAsGraphvizDot) {
  auto flow = RideFlow().Build();
  ASSERT_TRUE(flow.has_value());
  const std::string dot = (*flow)->ToDot();
  EXPECT_EQ(dot.rfind("digraph \"create_ride\" {", 0), 0u) << dot;
  EXPECT_NE(dot.find("\"started\" -> \"ride_created\";"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"ride_created\" [shape=ellipse"), std::string::npos) << dot;
  EXPECT_NE(dot.find("\"charge_created\" -> \"finished\";"), std::string::npos) << dot;
}

TEST(FlowTest, KeepsTheMaskedFieldsInTheOrderDeclaredAcrossCalls) {
  auto flow = RideFlow().Masked({"/card/number", "/card/cvc"}).Masked({"/items/0/iban"}).Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  EXPECT_EQ((*flow)->masked(), (std::vector<std::string>{"/card/number", "/card/cvc", "/items/0/iban"}));
  EXPECT_TRUE((*RideFlow().Build())->masked().empty());
}

TEST(FlowTest, RefusesAMaskedFieldThatIsNotAJsonPointerOrIsDeclaredTwice) {
  EXPECT_NE(BuildError(RideFlow().Masked({""})).find("masked field '' must be a JSON pointer starting with '/'"),
            std::string::npos);
  EXPECT_NE(BuildError(RideFlow().Masked({"card/number"})).find("must be a JSON pointer starting with '/'"),
            std::string::npos);
  EXPECT_NE(BuildError(RideFlow().Masked({"/card~2number"})).find("'/card~2number' is not a JSON pointer"),
            std::string::npos);
  EXPECT_NE(BuildError(RideFlow().Masked({"/card~"})).find("is not a JSON pointer"), std::string::npos);
  EXPECT_NE(BuildError(RideFlow().Masked({"/iban"}).Masked({"/iban"})).find("'/iban' is declared twice"),
            std::string::npos);
  EXPECT_EQ(BuildError(RideFlow().Masked({"/a~0b/~1c", "/items/0", "/"})), "") << "escapes, indexes, the empty member";
}

TEST(FlowTest, MaskedFieldsChangeNoVersionButAreDescribed) {
  auto plain = RideFlow().Build();
  auto masked = RideFlow().Masked({"/card/number", "/iban"}).Build();
  ASSERT_TRUE(plain.has_value() && masked.has_value());
  EXPECT_EQ((*masked)->version(), (*plain)->version()) << "masking changes no key's path";
  EXPECT_EQ((*masked)->Describe()["masked"], nlohmann::json({"/card/number", "/iban"}));
  EXPECT_EQ((*plain)->Describe()["masked"], nlohmann::json::array());
}

TEST(FlowTest, DescribesItsForeignPhasesWhoseNamesMakeTheProviderKeys) {
  auto flow = RideFlow().Build();
  ASSERT_TRUE(flow.has_value());
  EXPECT_EQ((*flow)->Describe()["foreign_phases"], nlohmann::json({"charge"}));
}

}  // namespace
}  // namespace phasekey
