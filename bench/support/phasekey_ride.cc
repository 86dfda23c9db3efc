#include "support/phasekey_ride.h"

#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "support/exposition.h"

namespace phasekey::bench {

Result<RideRun> RunPhasekeyRides(const std::string& url, const LoadOptions& load, const std::string& prefix,
                                 TestGateway* gateway, bool prepared_statements) {
  RunnerOptions options;
  options.database.url = url;
  options.database.prepared_statements = prepared_statements;
  options.database.pool_size = static_cast<std::size_t>(load.clients);
  options.metrics = Metrics::Create();
  auto runner = Runner::Open(options, {MakeRideFlow(gateway)});
  if (!runner) return runner.error();
  RideRun run;
  run.stats = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t seq) {
      Reply r = (*runner)->Execute("create_ride", Request{"acct-" + std::to_string(seq % 64),
                                                          prefix + std::to_string(seq), "POST", "/rides",
                                                          RideBody(seq)});
      return r.kind == Reply::Kind::kCompleted;
    };
  });
  run.commits_per_req = testing::SampleOf(options.metrics->Exposition(), "phasekey_commits_total") /
                        static_cast<double>(load.requests + load.warmup);
  return run;
}

}  // namespace phasekey::bench
