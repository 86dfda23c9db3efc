// A deploy that changes the ride flow while rides are in flight (issue 28).
//
// The ride service (v1: started -> ride_created -> charge_created ->
// finished) really runs and is really killed: rides are left at each of its
// points, charged at the fake gateway where the point comes after the
// charge. Then v2, a test flow in this process, takes over:
//
//   started -(create_ride)-> ride_booked -(charge)-> receipt_due -(send_receipt)-> finished
//
// It renamed ride_created (Renamed) and replaced charge_created
// (Retired, resuming at receipt_due). The deploy gate lists the stranded
// rides before the mapping exists and nothing after; without the mapping
// the rides wait, none is failed, and the metric counts them; with it every
// ride finishes, each charged exactly once in the gateway's ledger.
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <set>

#include "phasekey/deploy_gate.h"
#include "phasekey/metrics.h"
#include "phasekey/phases/payment_outcome.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "ride_charger.h"
#include "support/exposition.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::SampleOf;

constexpr RecoveryPoint kRideCreated{"ride_created"};      // v1
constexpr RecoveryPoint kChargeCreated{"charge_created"};  // v1
constexpr RecoveryPoint kRideBooked{"ride_booked"};        // v2
constexpr RecoveryPoint kReceiptDue{"receipt_due"};        // v2

// The ride service's flow name, and how its HTTP layer stores a ride.
constexpr char kFlow[] = "create_ride";
constexpr int kLeaseSeconds = 3;
constexpr int kChargeTimeoutMs = 1000;

// A PL/pgSQL trigger on the example's rides table that fails every `event`
// with a serialization failure (40001), a retryable error: the phase that
// touches the table fails, and the service leaves the key where it was.
std::string FailRides(const std::string& event) {
  return "CREATE OR REPLACE FUNCTION fail_rides() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
         "RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END $$; "
         "CREATE TRIGGER fail_rides BEFORE " +
         event + " ON rides FOR EACH ROW EXECUTE FUNCTION fail_rides()";
}

class FlowVersionsTest : public ::testing::Test {
 protected:
  FlowVersionsTest()
      : world_({.database_url = db_.url(), .lease_seconds = kLeaseSeconds, .charge_timeout_ms = kChargeTimeoutMs}),
        charger_("stripe", "http://127.0.0.1:" + std::to_string(world_.gateway_port()),
                 milliseconds(kChargeTimeoutMs)) {}

  // v2 of the ride flow; `mapped`: with its Renamed and Retired points.
  std::shared_ptr<const Flow> V2(bool mapped) {
    Flow::Builder b(kFlow);
    b.Atomic(kStarted, "create_ride", [](AtomicContext&) -> PhaseResult { return GoTo{kRideBooked}; }, {kRideBooked});
    charger_.AddChargePhase(b, kRideBooked, "charge", kReceiptDue, 2000,
                            "usd");  // the same phase name: the same provider key
    b.Atomic(kReceiptDue, "send_receipt",
             [](AtomicContext& ctx) -> PhaseResult {
               // A ride resumed from v1's charge_created has its charge there.
               const RecoveryPoint at = ctx.Outcome(kReceiptDue).is_null() ? kChargeCreated : kReceiptDue;
               return Respond{JsonResponse(201, {{"charge_id", phases::ChargeOutcome::At(ctx, at).payment_id}})};
             },
             {kFinished});
    if (mapped) b.Renamed(kRideCreated, kRideBooked).Retired(kChargeCreated, Retirement::ResumeAt(kReceiptDue));
    auto flow = b.Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  std::unique_ptr<Runner> OpenV2(bool mapped) {
    RunnerOptions o;
    o.database.url = db_.url();
    o.lease = std::chrono::seconds(kLeaseSeconds);
    o.lease_margin = milliseconds(1500);
    o.database.call_deadline = milliseconds(1400);
    o.backoff_base = milliseconds(5);
    o.backoff_cap = milliseconds(20);
    o.metrics = metrics_;
    auto r = Runner::Open(o, {V2(mapped)});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  Reply Retry(Runner* runner, int user, const std::string& key) {
    return runner->Execute(kFlow, Request{"user_" + std::to_string(user), key, "POST", "/rides", testing::kRideBody});
  }

  std::string PointOf(const std::string& key) {
    return db_.Value("SELECT recovery_point FROM phasekey.idempotency_keys WHERE idempotency_key = '" + key + "'");
  }

  // Where each key of the ledger was charged: idempotency key -> charges.
  std::map<std::string, int> ChargesByLedgerKey() {
    std::map<std::string, int> out;
    for (const auto& charge : world_.Ledger()) ++out[charge["idempotency_key"].get<std::string>()];
    return out;
  }

  // Leaves one ride of `user` under `key` at each of v1's points; returns
  // the keys and their users.
  std::map<std::string, int> LeaveRidesAtEveryPoint() {
    std::map<std::string, int> keys;
    std::uint16_t port = 0;
    auto service = world_.StartService(&port);
    EXPECT_NE(port, 0);
    db_.Exec(FailRides("INSERT"));  // create_ride fails: the key is kept at started
    EXPECT_EQ(world_.PostRide(port, 1, "v1-started").status, 503);
    db_.Exec("DROP TRIGGER fail_rides ON rides");
    keys["v1-started"] = 1;
    db_.Exec(FailRides("UPDATE"));  // send_receipt fails after the charge: kept at charge_created
    for (int user : {2, 3}) {
      const std::string key = "v1-charge-created-" + std::to_string(user);
      EXPECT_EQ(world_.PostRide(port, user, key).status, 503);
      keys[key] = user;
    }
    db_.Exec("DROP TRIGGER fail_rides ON rides");
    service->Signal(SIGTERM);
    service->Wait();
    for (int user : {4, 5}) {  // killed by SIGKILL right after the gateway answered the charge
      const std::string key = "v1-ride-created-" + std::to_string(user);
      auto dying = world_.StartService(&port, {.env = {"PHASEKEY_CRASH_AT=foreign.charge.after_call"}});
      EXPECT_NE(port, 0);
      EXPECT_FALSE(world_.PostRide(port, user, key, testing::kRideBody, milliseconds(10000)).ok);
      EXPECT_EQ(dying->Wait(), 128 + SIGKILL) << "the fault happened: the service died by SIGKILL mid-ride";
      keys[key] = user;
    }
    return keys;
  }

  testing::TestDatabase db_;
  testing::RideWorld world_;
  ride_booking::RideCharger charger_;
  std::shared_ptr<Metrics> metrics_ = Metrics::Create();
};

TEST_F(FlowVersionsTest, V2FinishesEveryV1RideOnceWithTheMappingAndLeavesThemAloneWithoutIt) {
  const auto keys = LeaveRidesAtEveryPoint();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(PointOf("v1-started"), "started");
  ASSERT_EQ(PointOf("v1-charge-created-2"), "charge_created");
  ASSERT_EQ(PointOf("v1-ride-created-4"), "ride_created");
  ASSERT_EQ(world_.Ledger().size(), 4u) << "rides 2..5 were charged under v1: " << world_.Ledger().dump();

  // The gate, before the mapping exists: the stranded rides, by point.
  auto stranded = FindStrandedKeys(db_.url(), std::vector<std::shared_ptr<const Flow>>{V2(false)});
  ASSERT_TRUE(stranded.has_value()) << stranded.error().ToString();
  ASSERT_EQ(stranded->size(), 2u);
  EXPECT_EQ((*stranded)[0].recovery_point, "charge_created");
  EXPECT_EQ((*stranded)[0].keys, 2);
  EXPECT_EQ((*stranded)[1].recovery_point, "ride_created");
  EXPECT_EQ((*stranded)[1].keys, 2);
  auto passes = FindStrandedKeys(db_.url(), std::vector<std::shared_ptr<const Flow>>{V2(true)});
  ASSERT_TRUE(passes.has_value()) << passes.error().ToString();
  EXPECT_TRUE(passes->empty()) << "with the mapping, no ride is stranded";

  // v2 without the mapping: the rides wait; none is failed.
  std::this_thread::sleep_for(std::chrono::seconds(kLeaseSeconds));  // the killed services' leases expire
  {
    auto unmapped = OpenV2(false);
    for (const auto& [key, user] : keys) {
      const Reply r = Retry(unmapped.get(), user, key);
      if (key == "v1-started") {
        EXPECT_EQ(r.kind, Reply::Kind::kCompleted) << key << ": " << r.detail << " (started is in every version)";
      } else {
        EXPECT_EQ(r.kind, Reply::Kind::kRetryLater) << key << ": " << r.detail;
      }
    }
    auto worker = RedriveWorker::Open(unmapped.get(), {});
    ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
    auto round = (*worker)->RunOnce();
    ASSERT_TRUE(round.has_value()) << round.error().ToString();
    EXPECT_EQ(round->stranded, 4u);
    EXPECT_EQ(round->claimed, 0u);
    const std::string exposition = metrics_->Exposition();
    EXPECT_EQ(SampleOf(exposition, R"(phasekey_stranded_keys{flow="create_ride",recovery_point="ride_created"})"), 2);
    EXPECT_EQ(SampleOf(exposition, R"(phasekey_stranded_keys{flow="create_ride",recovery_point="charge_created"})"), 2);
    EXPECT_EQ(SampleOf(exposition, R"(phasekey_stranded_answers_total{flow="create_ride"})"), 4);
    EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'active'"), "4");
    EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE response_status = 500"), "0");
  }

  // v2 with the mapping: every ride finishes, charged once.
  auto mapped = OpenV2(true);
  for (const auto& [key, user] : keys) {
    const Reply r = Retry(mapped.get(), user, key);
    ASSERT_TRUE(r.kind == Reply::Kind::kCompleted || r.kind == Reply::Kind::kReplayed) << key << ": " << r.detail;
    EXPECT_EQ(r.response.status, 201) << key << ": " << r.response.body;
  }
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'"), "5");
  const auto charges = ChargesByLedgerKey();
  EXPECT_EQ(charges.size(), keys.size()) << world_.Ledger().dump();
  for (const auto& [ledger_key, n] : charges) EXPECT_EQ(n, 1) << ledger_key << " charged " << n << " times";
  std::set<std::string> customers;
  for (const auto& charge : world_.Ledger()) customers.insert(charge["customer"].get<std::string>());
  EXPECT_EQ(customers.size(), keys.size()) << "one charge per ride, each ride its own customer";
}

}  // namespace
}  // namespace phasekey
