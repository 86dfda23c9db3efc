// Runs the ride flow through phasekey under load: shared by the durability
// and the peer families, so both measure the same thing.
#ifndef PHASEKEY_BENCH_SUPPORT_PHASEKEY_RIDE_H_
#define PHASEKEY_BENCH_SUPPORT_PHASEKEY_RIDE_H_

#include <cstdint>
#include <string>

#include "phasekey/status.h"
#include "support/bench_flows.h"
#include "support/load.h"

namespace phasekey::bench {

struct RideRun {
  LoadStats stats;
  double commits_per_req = 0;  // phasekey_commits_total / requests sent (warm-up included)
};

// Opens a Runner on `url` with one pooled connection per client, sends
// load.requests ride requests (keys "<prefix><seq>", 64 accounts) and closes
// it. A request counts as failed unless it completed. Errors opening the
// runner come back as the Status. `prepared_statements` is
// DatabaseOptions::prepared_statements (false through a transaction pooler).
Result<RideRun> RunPhasekeyRides(const std::string& url, const LoadOptions& load, const std::string& prefix,
                                 TestGateway* gateway, bool prepared_statements = true);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_PHASEKEY_RIDE_H_
