// Metrics: Prometheus counters, histograms and gauges of one process
// (through prometheus-cpp), shared by its runner and workers.
//
//   phasekey_requests_total{flow,reply}            every answer: completed, replayed,
//                                                  in_progress (409), mismatch (422), ...
//   phasekey_claims_total{flow,outcome}            inserted, taken_over, own (re-drive)
//   phasekey_phase_outcomes_total{flow,phase,kind} moved, finished, retry, lease_lost, ...
//   phasekey_fencing_rejections_total{flow}        fenced writes that matched no row
//   phasekey_commits_total                         transactions the runner committed (claims,
//                                                  moves, finishes, releases; a replay's read):
//                                                  over phasekey_requests_total, the database
//                                                  commits (WAL flushes) one request costs
//   phasekey_redrive_attempts_total{result}        re-driven keys: finished, released, ...
//   phasekey_dead_letters_total                    keys dead-lettered by the worker
//   phasekey_keys_stopped_total{flow,state}        keys the engine stopped: needs_operator
//                                                  (alert on any increase) or dead
//   phasekey_request_duration_seconds{flow}        histogram
//   phasekey_phase_duration_seconds{flow,phase}    histogram
//   phasekey_keys{state}                           gauge: active, dead, needs_operator
//                                                  (set by the reaper)
//   phasekey_inbox_deliveries_total{provider,delivery}  inbound events: applied, duplicate,
//                                                  parked, retry (not acknowledged), invalid
//   phasekey_inbox_unparked_total{provider}        parked events applied later
//   phasekey_inbox_parked_events                   gauge: parked events (set by the reaper)
//   phasekey_suspected_key_regeneration_total{flow}  keys repeating an earlier key's request
//                                                  within the flow's window (counted by the
//                                                  reaper's audit): a client that makes a new
//                                                  key for a retry
//   phasekey_suspected_abandoned_after_409_total{flow}  keys answered 409 and never sent
//                                                  again (this process's runner)
//   phasekey_stranded_keys{flow,recovery_point}    gauge: active keys at a point this
//                                                  binary's flow does not know (another
//                                                  version's; set by the re-drive worker)
//   phasekey_stranded_answers_total{flow}          requests answered 503 because their key
//                                                  waits at such a point (this runner)
//   phasekey_worker_last_poll_timestamp_seconds{role}  gauge: Unix time of the last poll a
//                                                  worker of this process made without error
//                                                  (role: redrive, reaper, enqueuer); alert
//                                                  when time() minus it grows
//
// Thread-safe. Create one per process and pass it to RunnerOptions::metrics
// and the workers; Exposition() renders the text format for /metrics.
#ifndef PHASEKEY_METRICS_H_
#define PHASEKEY_METRICS_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace phasekey {

// The registry of the metrics listed above. An application creates it,
// hands it to the runner and the workers, and serves Exposition(); the
// recording calls below are the engine's (the runner, the workers, the
// inbox), made with the label values listed above.
class Metrics {
 public:
  // A registry with every metric above registered and no sample recorded.
  static std::shared_ptr<Metrics> Create();
  ~Metrics();

  // One answer of the runner: phasekey_requests_total{flow,reply} and
  // phasekey_request_duration_seconds{flow} (`took`: the time to answer).
  void Request(std::string_view flow, std::string_view reply, std::chrono::duration<double> took);
  // One claim of a key: phasekey_claims_total{flow,outcome}.
  void Claim(std::string_view flow, std::string_view outcome);
  // One phase attempt and how it ended: phasekey_phase_outcomes_total and
  // phasekey_phase_duration_seconds{flow,phase} (`took`: the attempt's time).
  void Phase(std::string_view flow, std::string_view phase, std::string_view kind, std::chrono::duration<double> took);
  // A fenced write that matched no row: phasekey_fencing_rejections_total.
  void FencingRejection(std::string_view flow);
  // One transaction the runner committed: phasekey_commits_total.
  void Commit();
  // One key re-driven by the worker: phasekey_redrive_attempts_total{result}.
  void Redrive(std::string_view result);
  // Adds `count` keys dead-lettered by the worker to
  // phasekey_dead_letters_total.
  void DeadLetters(double count);
  // A key the engine stopped without a response:
  // phasekey_keys_stopped_total{flow,state} (needs_operator or dead).
  void KeyStopped(std::string_view flow, std::string_view state);
  // Sets the gauge phasekey_keys{state} to `count` (the reaper's count).
  void Keys(std::string_view state, double count);
  // One inbound event delivery: phasekey_inbox_deliveries_total.
  void InboxDelivery(std::string_view provider, std::string_view delivery);
  // Adds `count` parked events applied later to
  // phasekey_inbox_unparked_total{provider}.
  void InboxUnparked(std::string_view provider, double count);
  // Sets the gauge phasekey_inbox_parked_events to `count` (the reaper's
  // count).
  void InboxParked(double count);
  // One key the reaper's audit suspects of repeating an earlier key's
  // request under a new key: phasekey_suspected_key_regeneration_total{flow}.
  void SuspectedKeyRegeneration(std::string_view flow);
  // One key answered 409 and never sent again within the runner's
  // silence_after_409: phasekey_suspected_abandoned_after_409_total{flow}.
  void SuspectedAbandonedAfter409(std::string_view flow);

  // Sets phasekey_stranded_keys{flow,recovery_point} to `count` (the re-drive
  // worker's count of one round; 0 clears a point seen before).
  void StrandedKeys(std::string_view flow, std::string_view recovery_point, double count);
  // A request answered 503 because its key waits at a point of another
  // version of its flow: phasekey_stranded_answers_total{flow}.
  void StrandedAnswer(std::string_view flow);

  // A worker of this process (`role`: redrive, reaper or enqueuer) finished
  // a poll without error: phasekey_worker_last_poll_timestamp_seconds{role}
  // is set to the current time.
  void WorkerPolled(std::string_view role);
  // When that last happened for `role`; nullopt if it never did.
  std::optional<std::chrono::system_clock::time_point> LastPoll(std::string_view role) const;

  // The Prometheus text exposition format (version 0.0.4).
  std::string Exposition() const;

 private:
  class Impl;
  Metrics();
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey

#endif  // PHASEKEY_METRICS_H_
