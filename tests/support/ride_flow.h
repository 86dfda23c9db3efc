// A small ride flow (Leach's create ride, charge, send receipt) and an
// in-process gateway with Stripe's idempotency semantics, for engine tests.
// The real example lives in examples/ride_booking; this one exists so engine
// tests can inject failures at every phase.
#ifndef PHASEKEY_TESTS_SUPPORT_RIDE_FLOW_H_
#define PHASEKEY_TESTS_SUPPORT_RIDE_FLOW_H_

#include <atomic>
#include <condition_variable>
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
  // Returns the charge id for `provider_key` (a new one the first time).
  std::string Charge(const std::string& provider_key);
  int charges() const;       // distinct charges made
  int calls() const { return calls_.load(); }
  std::set<std::string> keys() const;

  // Fault hooks, consulted by the flow's charge phase.
  std::atomic<int> fail_retryable{0};   // next N calls answer Retry (not charged)
  std::atomic<int> fail_unknown{0};     // next N calls charge, then answer OutcomeUnknown
  std::atomic<int> throw_next{0};       // next N calls throw std::runtime_error
  std::atomic<bool> decline{false};     // answer a terminal 402

  // Sets (or, with nullptr, clears) a hook run at the start of every charge
  // call, e.g. to block on a latch. Safe to call while a hook is running: the
  // running call keeps its own copy alive.
  void set_before_call(std::function<void()> hook);
  void RunBeforeCall() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> charges_;
  std::atomic<int> calls_{0};
  std::shared_ptr<const std::function<void()>> before_call_;  // guarded by mu_
};

// Creates the flow's tables (rides, staged_jobs) in the database at `url`.
void CreateRideTables(const std::string& url);

// The ride flow bound to `gateway` (which must outlive it).
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
