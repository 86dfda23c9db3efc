#include "phasekey/tools/worker_group.h"

#include <cstdio>
#include <thread>
#include <vector>

#include "phasekey/tools/stop_signals.h"
#include "util/json_log.h"

namespace phasekey {

std::vector<WorkerLiveness> LivenessOf(const WorkerSelection& selection) {
  constexpr std::chrono::milliseconds kSlowRound{60000};
  std::vector<WorkerLiveness> roles;
  if (selection.redrive) roles.push_back({"redrive", 3 * selection.redrive_options.poll_interval + kSlowRound});
  if (selection.reap) roles.push_back({"reaper", 3 * selection.reaper_options.interval + kSlowRound});
  if (selection.enqueue) roles.push_back({"enqueuer", 3 * selection.enqueuer_options.poll_interval + kSlowRound});
  return roles;
}

Status RunWorkersUntilSignal(const DatabaseOptions& database, const WorkerSelection& selection, Runner* runner,
                             JobSink* sink) {
  const sigset_t stop_signals = BlockStopSignals();

  std::unique_ptr<RedriveWorker> redrive;
  std::unique_ptr<Reaper> reaper;
  std::unique_ptr<Enqueuer> enqueuer;
  if (selection.redrive) {
    if (runner == nullptr) return Status::InvalidArgument("the re-drive worker needs the application's flows");
    auto w = RedriveWorker::Open(runner, selection.redrive_options);
    if (!w) return w.error();
    redrive = std::move(*w);
  }
  if (selection.reap) {
    auto r = Reaper::Open(database, selection.reaper_options);
    if (!r) return r.error();
    reaper = std::move(*r);
  }
  if (selection.enqueue) {
    if (sink == nullptr) return Status::InvalidArgument("the enqueuer needs a job sink");
    auto e = Enqueuer::Open(database, selection.enqueuer_options, sink);
    if (!e) return e.error();
    enqueuer = std::move(*e);
  }
  std::vector<std::thread> threads;
  if (redrive) threads.emplace_back([&] { redrive->Run(); });
  if (reaper) threads.emplace_back([&] { reaper->Run(); });
  if (enqueuer) threads.emplace_back([&] { enqueuer->Run(); });
  LogJson({{"level", "info"},
           {"msg", "worker running"},
           {"redrive", redrive != nullptr},
           {"reap", reaper != nullptr},
           {"enqueue", enqueuer != nullptr}});
  const int sig = WaitForStopSignal(stop_signals);
  LogJson({{"level", "info"}, {"msg", "worker stopping"}, {"signal", sig}});
  if (redrive) redrive->Stop();
  if (reaper) reaper->Stop();
  if (enqueuer) enqueuer->Stop();
  for (auto& t : threads) t.join();
  nlohmann::json totals = {{"level", "info"}, {"msg", "worker stopped"}};
  if (redrive) {
    const RedriveRound t = redrive->totals();
    totals["redrive"] = {
        {"claimed", t.claimed}, {"finished", t.finished}, {"released", t.released}, {"dead_lettered", t.dead_lettered}};
  }
  if (enqueuer) totals["enqueued"] = enqueuer->delivered();
  LogJson(std::move(totals));
  return Status::OK();
}

}  // namespace phasekey
