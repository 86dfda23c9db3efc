// The engine's ride flow for tests and benchmarks: Leach's create ride,
// charge, send receipt, over a `rides` and a `staged_jobs` table, with an
// in-process gateway that has Stripe's idempotency semantics. tests/ and
// bench/ both build on it (bench links phasekey_ride_flow), so there is one.
//
// Why a flow beside the example's (examples/ride_booking/ride_flow.h, the
// real service's): that one charges over HTTP through a phases/ adapter, so
// a fault there is a process or a socket. This one charges in the process,
// through TestGateway, so an engine test can inject a failure at every phase
// (a Retry, an OutcomeUnknown after charging, a throw, a decline, a hook
// inside each atomic phase's transaction) and a benchmark measures the
// engine without an HTTP hop. The business statements are the ones the
// benchmarks' raw baselines issue too (bench/support/raw_ride.h).
#ifndef PHASEKEY_TESTS_SUPPORT_RIDE_FLOW_H_
#define PHASEKEY_TESTS_SUPPORT_RIDE_FLOW_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "phasekey/flow.h"

namespace phasekey::testing {

inline constexpr RecoveryPoint kRideCreated{"ride_created"};
inline constexpr RecoveryPoint kChargeCreated{"charge_created"};

// Charges once per provider key, like Stripe: a repeated key returns the
// first charge. Thread-safe.
class TestGateway {
 public:
  // Each call takes `delay` (a sleep, outside any lock) before it answers.
  explicit TestGateway(std::chrono::milliseconds delay = std::chrono::milliseconds(0)) : delay_(delay) {}
  // Sleeps `delay`, then returns the charge id for `provider_key` (a new one
  // the first time).
  std::string Charge(const std::string& provider_key);
  int charges() const;  // distinct charges made
  // Every call, repeats included: each is one execution at the gateway.
  std::int64_t calls() const { return calls_.load(); }
  std::set<std::string> keys() const;

  // Fault hooks, consulted by the flow's charge phase.
  std::atomic<bool> unavailable{false};  // while true, every call answers Retry (not charged)
  std::atomic<int> fail_retryable{0};    // next N calls answer Retry (not charged)
  std::atomic<int> fail_unknown{0};      // next N calls charge, then answer OutcomeUnknown
  std::atomic<int> throw_next{0};        // next N calls throw std::runtime_error
  std::atomic<bool> decline{false};      // answer a terminal 402

  // Sets (or, with nullptr, clears) a hook run at the start of every charge
  // call, e.g. to block on a latch. Safe to call while a hook is running: the
  // running call keeps its own copy alive.
  void set_before_call(std::function<void()> hook);
  void RunBeforeCall() const;

 private:
  const std::chrono::milliseconds delay_;
  mutable std::mutex mu_;
  std::map<std::string, std::string> charges_;
  std::atomic<std::int64_t> calls_{0};
  std::shared_ptr<const std::function<void()>> before_call_;  // guarded by mu_
};

// Creates the flow's tables in the database at `url`, unless they exist:
// rides (unique on account and key) and staged_jobs, in the public schema.
void CreateRideTables(const std::string& url);

// The ride flow "create_ride" bound to `gateway` (which must outlive it): an
// atomic insert of the ride, a foreign charge, an atomic update of the ride
// plus a staged receipt job answering 201. Two durable commits per request.
// Statements whose result the phase does not need travel with the commit
// (AtomicContext::ExecAtCommit): the ride's insert and the job's.
std::shared_ptr<const Flow> MakeRideFlow(TestGateway* gateway, std::chrono::milliseconds charge_timeout);

// Hooks on the atomic phases: called inside their transaction.
struct RideHooks {
  std::function<void(AtomicContext&)> in_create_ride;
  std::function<void(AtomicContext&)> in_send_receipt;
};
// `name` and `key`: the flow's name and where it takes its key from.
std::shared_ptr<const Flow> MakeRideFlow(TestGateway* gateway, std::chrono::milliseconds charge_timeout,
                                         std::shared_ptr<RideHooks> hooks, const std::string& name = "create_ride",
                                         KeySource key = KeySource::Header());

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_RIDE_FLOW_H_
