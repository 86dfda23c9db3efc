// Four ways to let exactly one of many concurrent requests with the same
// idempotency key do the work, for the contention family. Each request
// claims the key, calls the gateway once if it won, and stores the response;
// a loser answers at once (409 while the winner works, or the stored
// response once it finished).
//
//   kPhasekey  Runner::Execute of the "charge_only" flow (bench_flows.h).
//   kLeach     Leach's phase 1: SELECT, then INSERT of a locked key, in a
//              SERIALIZABLE transaction, unique index on the key; 40001 is
//              answered 409 (not retried), 23505 is answered 500.
//   kAdvisory  READ COMMITTED; pg_advisory_xact_lock on a hash of the key,
//              then SELECT and INSERT; no unique index (the lock is the only
//              guard).
//   kNaive     READ COMMITTED SELECT, then INSERT if nothing was found; no
//              unique index. Racing requests all find nothing and all run:
//              duplicates are the expected result and are counted.
//
// Thread-safety: a Strategy object per client thread (each owns a
// connection); the phasekey one shares a thread-safe Runner.
#ifndef PHASEKEY_BENCH_SUPPORT_CLAIM_STRATEGIES_H_
#define PHASEKEY_BENCH_SUPPORT_CLAIM_STRATEGIES_H_

#include <memory>
#include <string>
#include <string_view>

#include "phasekey/runner.h"
#include "support/bench_flows.h"

namespace phasekey::bench {

enum class StrategyKind { kPhasekey, kLeach, kAdvisory, kNaive };
std::string_view StrategyName(StrategyKind kind);  // "phasekey", "leach", ...

// What one request got.
enum class ClaimAnswer {
  kExecuted,       // it won: called the gateway and stored the response
  kConflict,       // 409: another request holds the key
  kReplayed,       // the stored response of the winner
  kSerialization,  // 40001 (or 40P01), answered 409 without retrying
  kError,          // anything else (500/503)
};

// Creates the baseline tables (leach_keys, advisory_keys, naive_keys).
void CreateClaimTables(const std::string& url);

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual ClaimAnswer Handle(const std::string& account, const std::string& key, const std::string& body) = 0;
};

// `runner` (kPhasekey, running "charge_only") must outlive the strategy;
// the others open their own connection to `url` and call `gateway`.
std::unique_ptr<Strategy> MakeStrategy(StrategyKind kind, const std::string& url, Runner* runner, TestGateway* gateway);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_CLAIM_STRATEGIES_H_
