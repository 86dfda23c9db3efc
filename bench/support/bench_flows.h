// What the benchmark families run: the engine's ride flow and its gateway
// (tests/support/ride_flow.h, shared with the tests), a ride request body,
// and the two smaller flows some families need. Built only on the public
// API.
#ifndef PHASEKEY_BENCH_SUPPORT_BENCH_FLOWS_H_
#define PHASEKEY_BENCH_SUPPORT_BENCH_FLOWS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "phasekey/flow.h"
#include "support/ride_flow.h"

namespace phasekey::bench {

using testing::CreateRideTables;
using testing::kChargeCreated;
using testing::kRideCreated;
using testing::TestGateway;

// The charge timeout every family's ride flow declares.
inline constexpr std::chrono::milliseconds kChargeTimeout{10000};

// The ride flow "create_ride" (tests/support/ride_flow.h) charging through
// `gateway`.
std::shared_ptr<const Flow> MakeRideFlow(TestGateway* gateway);

// A ride request body (about 100 bytes of JSON) for request number `seq`.
std::string RideBody(std::int64_t seq);

// "record": one atomic phase that answers 201 at once; the claim and the
// stored response share one transaction (one commit per request).
std::shared_ptr<const Flow> MakeRecordFlow();

// "charge_only": one foreign phase calling `gateway` and answering 201 with
// the charge; a claim commit, the call, then a finishing commit.
std::shared_ptr<const Flow> MakeChargeOnlyFlow(TestGateway* gateway);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_BENCH_FLOWS_H_
