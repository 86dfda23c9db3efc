#include "phasekey/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace phasekey {

class Metrics::Impl {
 public:
  Impl()
      : registry_(std::make_shared<prometheus::Registry>()),
        requests_(prometheus::BuildCounter()
                      .Name("phasekey_requests_total")
                      .Help("Answers of the runner by flow and reply kind")
                      .Register(*registry_)),
        claims_(prometheus::BuildCounter()
                    .Name("phasekey_claims_total")
                    .Help("Keys claimed: inserted, taken over, or resumed by their own holder")
                    .Register(*registry_)),
        phases_(prometheus::BuildCounter()
                    .Name("phasekey_phase_outcomes_total")
                    .Help("Phase outcomes by flow, phase and kind")
                    .Register(*registry_)),
        fencing_(prometheus::BuildCounter()
                     .Name("phasekey_fencing_rejections_total")
                     .Help("Fenced writes that matched no row: the holder had lost its lease")
                     .Register(*registry_)),
        commits_(prometheus::BuildCounter()
                     .Name("phasekey_commits_total")
                     .Help("Transactions the runner committed, read-only ones included (a replay reads its key "
                           "in one); per request, what the engine costs the database in commits")
                     .Register(*registry_)
                     .Add({})),
        redrive_(prometheus::BuildCounter()
                     .Name("phasekey_redrive_attempts_total")
                     .Help("Keys re-driven by the worker, by result")
                     .Register(*registry_)),
        dead_(prometheus::BuildCounter()
                  .Name("phasekey_dead_letters_total")
                  .Help("Keys dead-lettered by the re-drive worker")
                  .Register(*registry_)
                  .Add({})),
        stopped_(prometheus::BuildCounter()
                     .Name("phasekey_keys_stopped_total")
                     .Help("Keys the engine stopped without a response, by flow and state: needs_operator "
                           "(alert: a provider may hold an effect nobody verified) or dead (given up, nothing owed)")
                     .Register(*registry_)),
        request_seconds_(prometheus::BuildHistogram()
                             .Name("phasekey_request_duration_seconds")
                             .Help("Time to answer a request, by flow")
                             .Register(*registry_)),
        phase_seconds_(prometheus::BuildHistogram()
                           .Name("phasekey_phase_duration_seconds")
                           .Help("Time of one phase attempt, by flow and phase")
                           .Register(*registry_)),
        keys_(prometheus::BuildGauge()
                  .Name("phasekey_keys")
                  .Help("Keys by state, as last counted by the reaper")
                  .Register(*registry_)),
        inbox_deliveries_(prometheus::BuildCounter()
                              .Name("phasekey_inbox_deliveries_total")
                              .Help("Inbound event deliveries by provider and how they were disposed of")
                              .Register(*registry_)),
        inbox_unparked_(prometheus::BuildCounter()
                            .Name("phasekey_inbox_unparked_total")
                            .Help("Parked inbound events applied later, by provider")
                            .Register(*registry_)),
        inbox_parked_(prometheus::BuildGauge()
                          .Name("phasekey_inbox_parked_events")
                          .Help("Parked inbound events, as last counted by the reaper")
                          .Register(*registry_)
                          .Add({})),
        regenerations_(prometheus::BuildCounter()
                           .Name("phasekey_suspected_key_regeneration_total")
                           .Help("Keys that repeat an earlier key's account, flow and request within the flow's "
                                 "window: clients that make a new key for a retry (docs/clients.md)")
                           .Register(*registry_)),
        abandoned_409_(prometheus::BuildCounter()
                           .Name("phasekey_suspected_abandoned_after_409_total")
                           .Help("Keys answered 409 (in progress) that their client never sent again to this "
                                 "process: clients that take a 409 for a final failure (docs/clients.md)")
                           .Register(*registry_)),
        stranded_(prometheus::BuildGauge()
                      .Name("phasekey_stranded_keys")
                      .Help("Active keys at a recovery point this binary's flow does not know (another version "
                            "of the flow holds it), by flow and point, as last counted by the re-drive worker")
                      .Register(*registry_)),
        stranded_answers_(prometheus::BuildCounter()
                              .Name("phasekey_stranded_answers_total")
                              .Help("Requests answered 503 because their key waits at a recovery point of "
                                    "another version of its flow")
                              .Register(*registry_)),
        last_poll_(prometheus::BuildGauge()
                       .Name("phasekey_worker_last_poll_timestamp_seconds")
                       .Help("Unix time of the last poll a worker of this process made without error, by role "
                             "(redrive, reaper, enqueuer): a worker that stops polling shows as a growing age")
                       .Register(*registry_)) {}

  static const prometheus::Histogram::BucketBoundaries& Buckets() {
    static const prometheus::Histogram::BucketBoundaries b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                              0.25,  0.5,    1,     2.5,  5,     10};
    return b;
  }

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& claims_;
  prometheus::Family<prometheus::Counter>& phases_;
  prometheus::Family<prometheus::Counter>& fencing_;
  prometheus::Counter& commits_;
  prometheus::Family<prometheus::Counter>& redrive_;
  prometheus::Counter& dead_;
  prometheus::Family<prometheus::Counter>& stopped_;
  prometheus::Family<prometheus::Histogram>& request_seconds_;
  prometheus::Family<prometheus::Histogram>& phase_seconds_;
  prometheus::Family<prometheus::Gauge>& keys_;
  prometheus::Family<prometheus::Counter>& inbox_deliveries_;
  prometheus::Family<prometheus::Counter>& inbox_unparked_;
  prometheus::Gauge& inbox_parked_;
  prometheus::Family<prometheus::Counter>& regenerations_;
  prometheus::Family<prometheus::Counter>& abandoned_409_;
  prometheus::Family<prometheus::Gauge>& stranded_;
  prometheus::Family<prometheus::Counter>& stranded_answers_;
  prometheus::Family<prometheus::Gauge>& last_poll_;
};

namespace {
std::string S(std::string_view v) { return std::string(v); }
}  // namespace

Metrics::Metrics() : impl_(std::make_unique<Impl>()) {}
Metrics::~Metrics() = default;
std::shared_ptr<Metrics> Metrics::Create() { return std::shared_ptr<Metrics>(new Metrics()); }

void Metrics::Request(std::string_view flow, std::string_view reply, std::chrono::duration<double> took) {
  impl_->requests_.Add({{"flow", S(flow)}, {"reply", S(reply)}}).Increment();
  impl_->request_seconds_.Add({{"flow", S(flow)}}, Impl::Buckets()).Observe(took.count());
}
void Metrics::Claim(std::string_view flow, std::string_view outcome) {
  impl_->claims_.Add({{"flow", S(flow)}, {"outcome", S(outcome)}}).Increment();
}
void Metrics::Phase(std::string_view flow, std::string_view phase, std::string_view kind,
                    std::chrono::duration<double> took) {
  impl_->phases_.Add({{"flow", S(flow)}, {"phase", S(phase)}, {"kind", S(kind)}}).Increment();
  impl_->phase_seconds_.Add({{"flow", S(flow)}, {"phase", S(phase)}}, Impl::Buckets()).Observe(took.count());
}
void Metrics::FencingRejection(std::string_view flow) { impl_->fencing_.Add({{"flow", S(flow)}}).Increment(); }
void Metrics::Commit() { impl_->commits_.Increment(); }
void Metrics::Redrive(std::string_view result) { impl_->redrive_.Add({{"result", S(result)}}).Increment(); }
void Metrics::DeadLetters(double count) { impl_->dead_.Increment(count); }
void Metrics::KeyStopped(std::string_view flow, std::string_view state) {
  impl_->stopped_.Add({{"flow", S(flow)}, {"state", S(state)}}).Increment();
}
void Metrics::Keys(std::string_view state, double count) { impl_->keys_.Add({{"state", S(state)}}).Set(count); }
void Metrics::InboxDelivery(std::string_view provider, std::string_view delivery) {
  impl_->inbox_deliveries_.Add({{"provider", S(provider)}, {"delivery", S(delivery)}}).Increment();
}
void Metrics::InboxUnparked(std::string_view provider, double count) {
  impl_->inbox_unparked_.Add({{"provider", S(provider)}}).Increment(count);
}
void Metrics::InboxParked(double count) { impl_->inbox_parked_.Set(count); }

void Metrics::SuspectedKeyRegeneration(std::string_view flow) {
  impl_->regenerations_.Add({{"flow", S(flow)}}).Increment();
}

void Metrics::SuspectedAbandonedAfter409(std::string_view flow) {
  impl_->abandoned_409_.Add({{"flow", S(flow)}}).Increment();
}

void Metrics::StrandedKeys(std::string_view flow, std::string_view recovery_point, double count) {
  impl_->stranded_.Add({{"flow", S(flow)}, {"recovery_point", S(recovery_point)}}).Set(count);
}

void Metrics::StrandedAnswer(std::string_view flow) { impl_->stranded_answers_.Add({{"flow", S(flow)}}).Increment(); }

void Metrics::WorkerPolled(std::string_view role) { impl_->last_poll_.Add({{"role", S(role)}}).SetToCurrentTime(); }

std::optional<std::chrono::system_clock::time_point> Metrics::LastPoll(std::string_view role) const {
  const prometheus::Labels labels = {{"role", S(role)}};
  if (!impl_->last_poll_.Has(labels)) return std::nullopt;  // never polled (and reading adds no series)
  const double seconds = impl_->last_poll_.Add(labels).Value();
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds)));
}

std::string Metrics::Exposition() const {
  prometheus::TextSerializer serializer;
  return serializer.Serialize(impl_->registry_->Collect());
}

}  // namespace phasekey
