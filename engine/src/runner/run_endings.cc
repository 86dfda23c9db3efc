// The ends of a run that did not finish its flow, and the points a
// version of the flow does not run as they are: giving the key back after a
// failure (GiveUp), the failure cap (AtTheCap), stopping it without a
// response (Stop), and, at the claim, keys at points of another version of
// the flow (LeaveStranded, ResolvePoint). Part of RunnerImpl.
#include <fmt/format.h>

#include <algorithm>

#include "runner/runner_impl.h"
#include "util/json_log.h"

namespace phasekey::runner {
namespace {

// What a client is told to wait before retrying a key that waits at a point
// of another version of its flow: a rolling deploy moves on within seconds.
constexpr int kStrandedRetryAfterS = 5;

// Where a holder that gives the key back leaves it: where it got to, except
// that a point mapped at the claim with no progress since stays the row's
// older point (its phase's provider window, point_reached_at, goes on).
std::string LeftPoint(const Holder& h) {
  if (!h.mapped_to.empty() && h.point == h.mapped_to && h.pending.empty()) return h.fence.point;
  return h.point;
}

Response InternalErrorResponse(const std::string& reason) {
  return ProblemJsonResponse(500, "about:blank", "Internal Server Error",
                             {{"detail", "The operation failed permanently: " + reason}});
}

}  // namespace

std::optional<Step> RunnerImpl::LeaveStranded(const ExistingRow& row, const Job& job) const {
  if (row.state != KeyState::kActive) return std::nullopt;
  if (job.flow->Resolve(row.recovery_point).kind != PointResolution::Kind::kUnknown) return std::nullopt;
  if (std::chrono::seconds(row.point_age_s) >= options_.stranded_after) return std::nullopt;  // parked below
  if (options_.metrics) options_.metrics->StrandedAnswer(job.flow->name());
  Step reply;
  reply.kind = Step::Kind::kReply;
  reply.reply = MakeReply(
      Reply::Kind::kRetryLater,
      fmt::format("the key waits at recovery point '{}', which version {} of flow '{}' does not know; the version "
                  "that does (a rolling deploy) finishes it",
                  row.recovery_point, job.flow->version(), job.flow->name()),
      kStrandedRetryAfterS);
  return reply;
}

std::optional<Step> RunnerImpl::ResolvePoint(const Job& job, Holder* h) const {
  for (const auto& [before, now] : job.flow->renamed()) {
    if (h->outcomes.contains(before) && !h->outcomes.contains(now)) h->outcomes[now] = h->outcomes[before];
  }
  const PointResolution r = job.flow->Resolve(h->point);
  switch (r.kind) {
    case PointResolution::Kind::kCurrent: return std::nullopt;
    case PointResolution::Kind::kMapped: h->point = h->mapped_to = r.resume_at; return std::nullopt;
    case PointResolution::Kind::kForOperator:
      return StopStep(KeyState::kNeedsOperator, ErrorClass::kRetiredPoint,
                      fmt::format("recovery point '{}' was retired from flow '{}' (version {}) for an operator",
                                  h->point, job.flow->name(), job.flow->version()));
    case PointResolution::Kind::kUnknown: break;
  }
  return StopStep(KeyState::kNeedsOperator, ErrorClass::kStranded,
                  fmt::format("stranded: the key waited at recovery point '{}' longer than stranded_after ({} s), and "
                              "version {} of flow '{}' neither has it nor maps it (Renamed, Retired)",
                              h->point, options_.stranded_after.count(), job.flow->version(), job.flow->name()));
}

Reply RunnerImpl::GiveUp(Job& job, Holder* h, const Step& last) {
  const bool unclassified = last.error_class == ErrorClass::kUnclassified;
  const Leftover left{LeftPoint(*h), h->pending};  // a successful foreign call is never forgotten
  if (unclassified && h->failures + 1 >= options_.max_attempts) return AtTheCap(job, h, last);
  const auto delay = RedriveDelay(h->attempts);
  TransactionWithRetries([&](KeyTx& tx) {
    if (tx.KeyRelease(h->fence, left, last.reason, last.error_class, delay)) {
      tx.KeyNotifyRedrive(h->fence.bucket, delay);
    }
    return MakeStep(Step::Kind::kFinished);
  });  // if this fails too, the lease simply expires
  if (last.kind == Step::Kind::kBug) return MakeReply(Reply::Kind::kInternalError, last.reason);
  const int retry_after_s = static_cast<int>(std::max<long long>(1, (delay.count() + 999) / 1000));
  return MakeReply(Reply::Kind::kRetryLater, last.reason, retry_after_s);
}

Reply RunnerImpl::AtTheCap(Job& job, Holder* h, const Step& last) {
  const std::string why = fmt::format("gave up after {} unclassified failures: {}", h->failures + 1, last.reason);
  // Provably no external effect: still at the point it was claimed at, a
  // point no path through a foreign phase reaches, nothing recorded.
  const bool no_effect = h->point == h->fence.point && h->mapped_to.empty() &&
                         job.flow->BeforeAnyForeignPhase(h->point) && h->outcomes.empty() && h->pending.empty();
  if (!no_effect) {
    if (auto settled = ReconcileAtTheCap(job, h)) return *settled;
    return Stop(job, h,
                StopStep(KeyState::kNeedsOperator, ErrorClass::kUnclassified,
                         why + "; a foreign phase may have taken effect, so the key is parked for an "
                               "operator, not answered as failed"));
  }
  {
    Response stored = InternalErrorResponse(why);
    Step s = TransactionWithRetries(
        [&](KeyTx& tx) {
          tx.KeyFinish(h->fence, h->pending, stored, why, ErrorClass::kUnclassified);
          return MakeStep(Step::Kind::kFinished);
        },
        "", pg::Tx::Start::kWithFirstStatement);
    if (s.kind == Step::Kind::kFinished) return Completed(stored);
    return MakeReply(Reply::Kind::kRetryLater, why, 1);
  }
}

std::optional<Reply> RunnerImpl::ReconcileAtTheCap(Job& job, Holder* h) {
  const Flow::Node* node = job.flow->Find(h->point);
  if (h->reconciled || node == nullptr || node->kind != Flow::PhaseKind::kForeign || !node->looks_up) {
    return std::nullopt;
  }
  h->reconciled = h->reconciling = true;
  Step s = ForeignStep(job, h, *node);  // looks up only: found, it moves on; not there, NotTaken stops it dead
  h->reconciling = false;
  if (s.kind == Step::Kind::kMoved) s = RunFrom(job, h);  // the flow goes on from what was found
  if (s.kind == Step::Kind::kRetry || s.kind == Step::Kind::kUnclassified || s.kind == Step::Kind::kBug) {
    if (h->point == node->point) return std::nullopt;  // the lookup settled nothing: park
  }
  return Conclude(job, h, s);
}

void Job::AddTrace(nlohmann::json* line) const {
  if (key_trace) {
    (*line)["trace_id"] = key_trace->trace_id;
    (*line)["parent_id"] = key_trace->parent_id;
  }
  if (own_trace && (!key_read || own_trace != key_trace)) {
    (*line)["retry_trace_id"] = own_trace->trace_id;
    (*line)["retry_parent_id"] = own_trace->parent_id;
  }
}

Reply RunnerImpl::Stop(Job& job, Holder* h, const Step& stop) {
  const Leftover left{LeftPoint(*h), h->pending};
  Step s = TransactionWithRetries([&](KeyTx& tx) {
    return tx.KeyStop(h->fence, left, stop.stop_state, stop.reason, stop.error_class)
               ? MakeStep(Step::Kind::kFinished)
               : MakeStep(Step::Kind::kLeaseLost);
  });
  if (s.kind == Step::Kind::kLeaseLost) return MakeReply(Reply::Kind::kInProgress, "another holder took over", 1);
  if (s.kind != Step::Kind::kFinished) return MakeReply(Reply::Kind::kRetryLater, s.reason, 1);
  if (options_.metrics) options_.metrics->KeyStopped(job.flow->name(), KeyStateName(stop.stop_state));
  nlohmann::json line = {{"level", stop.stop_state == KeyState::kNeedsOperator ? "error" : "warn"},
                         {"msg", "key stopped"},
                         {"state", KeyStateName(stop.stop_state)},
                         {"account", job.request.account},
                         {"key_id", h->fence.id},
                         {"flow", job.flow->name()},
                         {"recovery_point", h->point},
                         {"reason", stop.reason}};
  job.AddTrace(&line);
  LogJson(std::move(line));
  return MakeReply(
      stop.stop_state == KeyState::kNeedsOperator ? Reply::Kind::kNeedsOperator : Reply::Kind::kDeadLettered,
      stop.reason);
}

}  // namespace phasekey::runner
