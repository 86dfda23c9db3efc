// The benchmarks' own ride flow (Leach's create ride, charge, send receipt)
// and an in-process gateway, plus the two smaller flows some families need.
// Built only on the public API. The business statements here are the ones
// the raw baselines (raw_ride.h) issue too.
#ifndef PHASEKEY_BENCH_SUPPORT_RIDE_FLOW_H_
#define PHASEKEY_BENCH_SUPPORT_RIDE_FLOW_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "phasekey/flow.h"

namespace phasekey::bench {

inline constexpr RecoveryPoint kRideCreated{"ride_created"};
inline constexpr RecoveryPoint kChargeCreated{"charge_created"};

// A payment gateway in the process: answers at once (or after `delay`),
// counting every call. It does not deduplicate: each call is one execution,
// which is what the contention family counts. Thread-safe.
class BenchGateway {
 public:
  explicit BenchGateway(std::chrono::milliseconds delay = std::chrono::milliseconds(0)) : delay_(delay) {}
  // Sleeps `delay`, then returns a new charge id. Never fails.
  std::string Charge(const std::string& provider_key);
  std::int64_t calls() const { return calls_.load(); }
  // While true, the flows' charge phase answers Retry without calling.
  std::atomic<bool> unavailable{false};

 private:
  const std::chrono::milliseconds delay_;
  std::atomic<std::int64_t> calls_{0};
};

// A ride request body (about 100 bytes of JSON) for request number `seq`.
std::string RideBody(std::int64_t seq);

// Creates the business tables in the database at `url`: rides (unique on
// account and key) and staged_jobs, in the public schema.
void CreateRideTables(const std::string& url);

// The three-step ride flow "create_ride": an atomic insert of the ride, a
// foreign charge through `gateway`, an atomic update of the ride plus a
// staged receipt job, answering 201. Two durable commits per request.
std::shared_ptr<const Flow> MakeRideFlow(BenchGateway* gateway);

// "record": one atomic phase that answers 201 at once; the claim and the
// stored response share one transaction (one commit per request).
std::shared_ptr<const Flow> MakeRecordFlow();

// "charge_only": one foreign phase calling `gateway` and answering 201 with
// the charge; a claim commit, the call, then a finishing commit.
std::shared_ptr<const Flow> MakeChargeOnlyFlow(BenchGateway* gateway);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_RIDE_FLOW_H_
