// Runs the ride flow through phasekey under load: shared by the durability
// and the peer families, so both measure the same thing.
#ifndef PHASEKEY_BENCH_SUPPORT_PHASEKEY_RIDE_H_
#define PHASEKEY_BENCH_SUPPORT_PHASEKEY_RIDE_H_

#include <cstdint>
#include <string>

#include "phasekey/data_protection.h"
#include "phasekey/status.h"
#include "support/bench_flows.h"
#include "support/load.h"

namespace phasekey::bench {

struct RideRun {
  LoadStats stats;
  double commits_per_req = 0;  // phasekey_commits_total / requests sent (warm-up included)
};

// How the runner of a ride run is opened; the defaults are the plaintext
// ride with prepared statements.
struct RideOptions {
  // DatabaseOptions::prepared_statements (false through a transaction pooler).
  bool prepared_statements = true;
  // RunnerOptions::encryption: with a source set, bodies, responses and
  // outcomes are sealed under a data key per account.
  EncryptionOptions encryption;
};

// Opens a Runner on `url` with one pooled connection per client, sends
// load.requests ride requests (keys "<prefix><seq>", 64 accounts) and closes
// it. A request counts as failed unless it completed. Errors opening the
// runner come back as the Status.
Result<RideRun> RunPhasekeyRides(const std::string& url, const LoadOptions& load, const std::string& prefix,
                                 TestGateway* gateway, const RideOptions& ride = {});

// Writes a key-encryption key file for RideOptions::encryption: a new
// directory under $TMPDIR (or /tmp) holding "keks" (0600, one line "<id>
// <64 hex digits>" of 32 bytes from /dev/urandom). Returns the file's path;
// RemoveKekFile(path) deletes the file and its directory. Throws
// std::runtime_error when it cannot.
std::string WriteKekFile();
void RemoveKekFile(const std::string& path);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_PHASEKEY_RIDE_H_
