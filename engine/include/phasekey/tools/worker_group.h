// Running the background workers in a process until SIGINT or SIGTERM.
//
// Used by `phasekey worker` and by applications that register their own
// flows (e.g. `ride_booking worker`). On the signal every worker stops taking
// work; keys in flight are finished or released, and the call returns.
#ifndef PHASEKEY_TOOLS_WORKER_GROUP_H_
#define PHASEKEY_TOOLS_WORKER_GROUP_H_

#include <vector>

#include "phasekey/database_options.h"
#include "phasekey/runner.h"
#include "phasekey/staged_job.h"
#include "phasekey/tools/metrics_routes.h"
#include "phasekey/workers.h"

namespace phasekey {

// Which workers RunWorkersUntilSignal() runs, and their options. All three
// by default.
struct WorkerSelection {
  bool redrive = true;               // needs a runner with the application's flows
  bool reap = true;                  // the Reaper
  bool enqueue = true;               // needs a job sink
  RedriveOptions redrive_options;    // for the RedriveWorker
  ReaperOptions reaper_options;      // for the Reaper
  EnqueuerOptions enqueuer_options;  // for the Enqueuer
};

// The roles `selection` runs, each to be seen polling within three of its
// poll intervals (the reaper's sweep interval) plus 60 s for a slow round:
// what a worker process's /healthz checks (phasekey/tools/metrics_routes.h).
std::vector<WorkerLiveness> LivenessOf(const WorkerSelection& selection);

// Blocks SIGINT and SIGTERM in the calling thread (call it before starting
// other threads, so they inherit the mask), runs the selected workers on
// threads of their own, waits for one of the signals, stops them and joins.
// Returns OK after a clean stop, or the first start-up failure.
Status RunWorkersUntilSignal(const DatabaseOptions& database, const WorkerSelection& selection, Runner* runner,
                             JobSink* sink);

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_WORKER_GROUP_H_
