// The deploy gate: before a binary with changed flows replaces the running
// one, compare its flows with the recovery points of every unfinished key.
//
// A key waits at a recovery point between phases (parked for a retry, due
// for the re-drive worker, held by a process being replaced). A new binary
// handles it only if its flow still has that point, or declares it as an
// older one (Flow::Builder::Renamed, Retired). A key at any other point is
// stranded: the new binary leaves it alone (RunnerOptions::stranded_after)
// until an operator settles it. The gate lists those keys before the deploy,
// so the flow can declare the mapping first (docs/upgrading.md, "Changing a
// flow").
//
// Every application can expose it: the example does as
// `ride_booking check-deploy`, and `phasekey flows check --flows FILE` runs
// it for flows exported with `<binary> flows describe`.
#ifndef PHASEKEY_DEPLOY_GATE_H_
#define PHASEKEY_DEPLOY_GATE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasekey/flow.h"
#include "phasekey/status.h"

namespace phasekey {

// Active keys of one flow waiting at one recovery point the flow does not
// know.
struct StrandedPoint {
  std::string flow;            // the flow's name
  std::string recovery_point;  // the point its keys wait at
  std::int64_t keys = 0;       // how many active keys wait there
  // How long the longest-waiting of them has been at the point.
  std::chrono::seconds longest_wait{0};
};

// The stranded points of `flows`, as Flow::Describe() describes them (the
// only members read: "name", "points", "renamed", "retired"), in the
// database at `database_url`; sorted by flow, then point. Only the flows
// named are checked: keys of other flows (another binary's) are not.
// InvalidArgument for a malformed description; the database's failure
// otherwise. Opens and closes its own connection.
Result<std::vector<StrandedPoint>> FindStrandedKeys(const std::string& database_url,
                                                    const std::vector<nlohmann::json>& flows);

// The same for flows built in this binary.
Result<std::vector<StrandedPoint>> FindStrandedKeys(const std::string& database_url,
                                                    const std::vector<std::shared_ptr<const Flow>>& flows);

}  // namespace phasekey

#endif  // PHASEKEY_DEPLOY_GATE_H_
