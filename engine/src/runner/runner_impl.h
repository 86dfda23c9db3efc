// RunnerImpl: the resume loop behind phasekey::Runner.
//
// Drive() claims the key (one transaction, shared with the first atomic
// phase), then runs phase after phase from the key's recovery point:
// atomic phases in a transaction that also makes the fenced move, foreign
// phases with no transaction open, their outcome recorded with the next
// move. Failures are retried inside the request with backoff; past that the
// lease is released for a later retry or the re-drive worker.
#ifndef PHASEKEY_SRC_RUNNER_RUNNER_IMPL_H_
#define PHASEKEY_SRC_RUNNER_RUNNER_IMPL_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "phasekey/fingerprint.h"
#include "phasekey/runner.h"
#include "runner/conflict_watch.h"
#include "runner/key_store.h"
#include "util/trace_parent.h"

namespace phasekey::runner {

// Everything known about one request while it runs.
struct Job {
  const Flow* flow = nullptr;
  // The request, without its body: the body is canonical_body (and parsed).
  Request request;
  std::string canonical_body;
  std::string fingerprint_hex;
  // The request's body as canonicalized once (Request::canonical_body, or
  // made by Start), whose document Body() shares; null for a re-drive,
  // whose body is read from the key row.
  std::shared_ptr<const CanonicalBody> parsed;
  std::string owner_token;  // ours, for every lease we take in this call
  int bucket = 0;           // the key's: computed for a new request, stored for a re-drive
  bool resume = false;      // Runner::Resume: the key must exist, never inserted
  // What the log line reports, updated as the request runs.
  std::int64_t key_id = 0;
  std::string point;
  int attempts = 0;
  // The request's own traceparent (Request::traceparent, parsed: nullopt
  // when it had none or an invalid one), and the one stored with the key,
  // once the claim has read or written the row (key_read).
  std::optional<util::TraceParent> own_trace, key_trace;
  bool key_read = false;

  // Adds the trace ids to a log line about the key: the key's `trace_id`
  // and `parent_id` (its first request's), and this request's own as
  // `retry_trace_id` and `retry_parent_id` when it brought another (or the
  // key's could not be read).
  void AddTrace(nlohmann::json* line) const;

  // The canonical body as JSON, parsed when a phase (or a natural key)
  // first reads it: a replay, a 409 or a 422 never does. With `parsed`, its
  // document (already parsed if a route read it).
  const nlohmann::json& Body() const {
    if (parsed) return parsed->document();
    if (!body_) body_ = nlohmann::json::parse(canonical_body);
    return *body_;
  }

 private:
  mutable std::optional<nlohmann::json> body_;
};

// What the current holder knows about its key.
struct Holder {
  using Clock = std::chrono::steady_clock;
  Fence fence;        // committed position and our token
  std::string point;  // where we are (ahead of fence.point after a foreign phase)
  // The point an older point of the row was mapped to at the claim
  // (Flow::Resolve: kMapped), "" when none. The row keeps its older point
  // until the key moves on from here, so a release without progress does
  // not restart the phase's provider window (point_reached_at).
  std::string mapped_to;
  std::string stable_id;
  int attempts = 0;                 // claims of the key, ours included
  int failures = 0;                 // unclassified failures recorded on the key
  std::chrono::seconds key_age{0};  // at the claim
  // The database's ages turned into local instants at the claim, rounded
  // towards the past: when the key was created, when it reached `point`
  // (the earliest its phase can have been attempted), and a moment before
  // the statement that last set our lease.
  Clock::time_point created, point_reached, lease_from;
  const char* claim = "inserted";  // inserted, taken_over or own (for metrics)
  // At the failure cap, the foreign phase at `point` runs once more under
  // SendPolicy::kLookUpOnly to settle what happened (RunnerImpl::AtTheCap);
  // true only during that run, and `reconciled` keeps it to one a request.
  bool reconciling = false;
  bool reconciled = false;
  nlohmann::json outcomes = nlohmann::json::object();  // committed + pending
  nlohmann::json pending = nlohmann::json::object();   // foreign outcomes not yet recorded
};

// The outcome of one step (a transaction or a foreign call).
struct Step {
  enum class Kind { kMoved, kFinished, kReply, kLeaseLost, kRetry, kUnclassified, kUnknownCommit, kBug, kStop };
  Kind kind = Kind::kRetry;
  KeyState stop_state = KeyState::kDead;  // kStop: kDead or kNeedsOperator
  std::string next;                       // kMoved
  Response response;                      // kFinished
  Reply reply;                            // kReply
  std::string reason;
  nlohmann::json recorded = nlohmann::json::object();  // kMoved: outcomes written with the move
  bool ran_phase = false;  // kMoved: a phase ran and moved the key (not a claim that only holds it)
  // kRetry, kUnclassified, kBug, kStop: the class of the error recorded on
  // the key (MakeStep's default by kind, or as the failure says; kRetry's
  // by default, as `kind`).
  ErrorClass error_class = ErrorClass::kRetryable;
};

// A reply of `kind` without a response (see Reply).
inline Reply MakeReply(Reply::Kind kind, std::string detail, int retry_after_s = 0) {
  Reply r;
  r.kind = kind;
  r.detail = std::move(detail);
  r.retry_after_s = retry_after_s;
  return r;
}

// The reply of a run that stored `response`.
inline Reply Completed(Response response) {
  Reply r;
  r.kind = Reply::Kind::kCompleted;
  r.response = std::move(response);
  return r;
}

inline Step MakeStep(Step::Kind kind, std::string reason = "") {
  Step s;
  s.kind = kind;
  s.reason = std::move(reason);
  s.error_class = kind == Step::Kind::kRetry ? ErrorClass::kRetryable : ErrorClass::kUnclassified;
  return s;
}

// A step of `kind` (kRetry) whose error is of class `error_class`.
inline Step MakeStep(Step::Kind kind, ErrorClass error_class, std::string reason) {
  Step s = MakeStep(kind, std::move(reason));
  s.error_class = error_class;
  return s;
}

// A step that ends the key without a response, in `state` (RunnerImpl::Stop),
// its error of class `error_class`.
inline Step StopStep(KeyState state, ErrorClass error_class, std::string reason) {
  Step s = MakeStep(Step::Kind::kStop, std::move(reason));
  s.stop_state = state;
  s.error_class = error_class;
  return s;
}

class RunnerImpl final : public Runner {
 public:
  // `keys` (not null): the store the runner's transactions run on
  // (runner/pg_key_store.h; an in-memory double in unit tests).
  RunnerImpl(RunnerOptions options, std::map<std::string, std::shared_ptr<const Flow>> flows,
             std::unique_ptr<KeyStore> keys);
  Reply Execute(const std::string& flow, const Request& request) override;
  Reply Resume(const ClaimedKey& key) override;
  std::vector<std::shared_ptr<const Flow>> flows() const override;

 private:
  // runner_impl.cc: the claim and the resume loop.
  Reply Drive(Job& job);
  Step Claim(Job& job, Holder* h);
  Step ClaimInTx(KeyTx& tx, Job& job, Holder* h, bool run_first_phase);
  Step RunFrom(Job& job, Holder* h);
  // The reply for the step that ended the run, after giving the key back,
  // finishing or stopping it as the step requires.
  Reply Conclude(Job& job, Holder* h, const Step& step);
  Reply GiveUp(Job& job, Holder* h, const Step& last);
  // At the failure cap: a stored 500 only for a key that provably made no
  // external effect, otherwise parked for an operator.
  Reply AtTheCap(Job& job, Holder* h, const Step& last);
  // At the cap, for a key at a foreign phase that can look its operation
  // up: that lookup, and the flow from what it found. nullopt when there is
  // nothing to look up or the lookup settled nothing (then: park).
  std::optional<Reply> ReconcileAtTheCap(Job& job, Holder* h);
  // The answer for a key at a point its flow does not know, taken without
  // touching the row while it has waited there less than stranded_after;
  // nullopt when the point is known (or the wait is over).
  std::optional<Step> LeaveStranded(const ExistingRow& row, const Job& job) const;
  // Where the point h holds (as claimed) goes on in this flow: sets h->point
  // to a mapped point, or the step that stops the key for an operator.
  std::optional<Step> ResolvePoint(const Job& job, Holder* h) const;
  Reply Stop(Job& job, Holder* h, const Step& stop);
  // phase_steps.cc: one phase, with retries inside the request.
  Step AtomicStep(Job& job, Holder* h, const Flow::Node& node);
  Step AtomicInTx(KeyTx& tx, Job& job, const Holder& h, const Flow::Node& node);
  Step ApplyAtomicResult(KeyTx& tx, const Job& job, const Holder& h, const Flow::Node& node, const PhaseResult& result);
  Step ForeignStep(Job& job, Holder* h, const Flow::Node& node);
  Step RecordForeign(Job& job, Holder* h, const Flow::Node& node, const PhaseResult& result);
  // What the foreign phase at h's point may send now (flow.h, SendPolicy).
  SendPolicy PolicyFor(const Holder& h, const Flow::Node& node) const;
  // Renews the lease unless what is left of it covers `node`'s call plus
  // the margin; kFinished when the lease covers the call, else the failure.
  Step EnsureLease(Holder* h, const Flow::Node& node);
  // One transaction around `body`; `point` names its crash points
  // ("<point>.before_commit", "<point>.after_commit", see crash_point.h).
  Step Transaction(const std::function<Step(KeyTx&)>& body, std::string_view point = "",
                   pg::Tx::Start start = pg::Tx::Start::kAtOnce);
  Step TransactionWithRetries(const std::function<Step(KeyTx&)>& body, std::string_view point = "",
                              pg::Tx::Start start = pg::Tx::Start::kAtOnce);
  // kFromRequest: a new request (a natural key is derived from it);
  // kStored: a re-drive, whose key is the one stored on the row.
  enum class KeyOrigin { kFromRequest, kStored };
  // `stored_bucket`: the bucket stored on the key (re-drive); computed from
  // the account otherwise.
  Reply Start(const std::string& flow, const Request& request, std::string owner_token, KeyOrigin origin,
              std::optional<int> stored_bucket);
  void Observe(const Job& job, const Reply& reply, std::chrono::steady_clock::time_point started) const;
  // Tells the 409 watch about a client's request (arrived at `arrived`);
  // counts and logs the keys whose silence after a 409 has passed.
  void WatchConflicts(const Job& job, const Reply& reply, std::chrono::steady_clock::time_point arrived) const;
  void ObservePhase(const Job& job, const Flow::Node& node, const Step& step,
                    std::chrono::steady_clock::time_point started) const;
  void Backoff(int attempt) const;
  std::chrono::milliseconds RedriveDelay(int attempts) const;
  int BucketOf(const std::string& account) const;

  const RunnerOptions& options_;  // the base's
  const std::map<std::string, std::shared_ptr<const Flow>> flows_;
  const std::unique_ptr<KeyStore> keys_;
  const std::unique_ptr<ConflictWatch> conflicts_;  // null when options_.silence_after_409 is 0
};

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_RUNNER_IMPL_H_
