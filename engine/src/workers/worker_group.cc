#include "phasekey/worker_group.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>
#include <vector>

namespace phasekey {

Status RunWorkersUntilSignal(const DatabaseOptions& database, const WorkerSelection& selection, Runner* runner,
                             JobSink* sink) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

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
  std::fprintf(stderr, "phasekey worker: running%s%s%s; SIGINT or SIGTERM stops\n", redrive ? " redrive" : "",
               reaper ? " reap" : "", enqueuer ? " enqueue" : "");
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "phasekey worker: signal %d, stopping\n", sig);
  if (redrive) redrive->Stop();
  if (reaper) reaper->Stop();
  if (enqueuer) enqueuer->Stop();
  for (auto& t : threads) t.join();
  if (redrive) {
    const RedriveRound t = redrive->totals();
    std::fprintf(stderr, "phasekey worker: re-drive totals: claimed %zu, finished %zu, released %zu, dead-lettered %zu\n",
                 t.claimed, t.finished, t.released, t.dead_lettered);
  }
  if (enqueuer) std::fprintf(stderr, "phasekey worker: enqueued %zu jobs\n", enqueuer->delivered());
  return Status::OK();
}

}  // namespace phasekey
