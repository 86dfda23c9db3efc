// Metrics: Prometheus counters, histograms and gauges of one process
// (through prometheus-cpp), shared by its runner and workers.
//
//   phasekey_requests_total{flow,reply}            every answer: completed, replayed,
//                                                  in_progress (409), mismatch (422), ...
//   phasekey_claims_total{flow,outcome}            inserted, taken_over, own (re-drive)
//   phasekey_phase_outcomes_total{flow,phase,kind} moved, finished, retry, lease_lost, ...
//   phasekey_fencing_rejections_total{flow}        fenced writes that matched no row
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
//
// Thread-safe. Create one per process and pass it to RunnerOptions::metrics
// and the workers; Exposition() renders the text format for /metrics.
#ifndef PHASEKEY_METRICS_H_
#define PHASEKEY_METRICS_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace phasekey {

class Metrics {
 public:
  static std::shared_ptr<Metrics> Create();
  ~Metrics();

  void Request(std::string_view flow, std::string_view reply, std::chrono::duration<double> took);
  void Claim(std::string_view flow, std::string_view outcome);
  void Phase(std::string_view flow, std::string_view phase, std::string_view kind,
             std::chrono::duration<double> took);
  void FencingRejection(std::string_view flow);
  void Redrive(std::string_view result);
  void DeadLetters(double count);
  void KeyStopped(std::string_view flow, std::string_view state);
  void Keys(std::string_view state, double count);
  void InboxDelivery(std::string_view provider, std::string_view delivery);
  void InboxUnparked(std::string_view provider, double count);
  void InboxParked(double count);
  void SuspectedKeyRegeneration(std::string_view flow);
  void SuspectedAbandonedAfter409(std::string_view flow);

  // The Prometheus text exposition format (version 0.0.4).
  std::string Exposition() const;

 private:
  class Impl;
  Metrics();
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey

#endif  // PHASEKEY_METRICS_H_
