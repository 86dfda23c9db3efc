// One phase at a time: atomic phases in a transaction with their fenced move,
// foreign phases with no transaction open. Part of RunnerImpl.
#include <fmt/format.h>

#include <pqxx/except>

#include "phasekey/crash_point.h"
#include "runner/phase_context.h"
#include "runner/runner_impl.h"

namespace phasekey::runner {
namespace {

bool Rolls(Step::Kind k) {
  return k == Step::Kind::kRetry || k == Step::Kind::kUnclassified || k == Step::Kind::kLeaseLost ||
         k == Step::Kind::kBug;
}

// The class of the error a phase's failure leaves on the key while it is
// retried (kRetryable, kOutcomeUnknown).
ErrorClass ClassOf(const Failure& f) {
  return f.kind == Failure::Kind::kOutcomeUnknown ? ErrorClass::kOutcomeUnknown : ErrorClass::kRetryable;
}

// Checks a GoTo against the flow's declared edges.
std::string BadTarget(const Flow& flow, const Flow::Node& node, const GoTo& g) {
  if (g.next == kFinished) return fmt::format("phase '{}' went to 'finished' without a response", node.phase);
  if (!flow.Declares(node.point, g.next.name())) {
    return fmt::format("phase '{}' went to undeclared recovery point '{}'", node.phase, g.next.name());
  }
  return "";
}

// Checks a final response: its status must be an HTTP status (100..599),
// as the key row stores it.
std::string BadResponse(const Flow::Node& node, const Response& response) {
  if (response.status >= 100 && response.status <= 599) return "";
  return fmt::format("phase '{}' answered with status {}, which is not an HTTP status", node.phase, response.status);
}

}  // namespace

Step RunnerImpl::Transaction(const std::function<Step(KeyTx&)>& body, std::string_view point, pg::Tx::Start start) {
  Step step;
  bool deliberate = false;
  Status s = keys_->Transact(
      [&](KeyTx& tx) {
        step = body(tx);
        if (Rolls(step.kind)) {
          deliberate = true;
          throw pg::Rollback{Status::Retryable("the step rolls back: " + step.reason)};
        }
        if (!point.empty()) PHASEKEY_CRASH_POINT(std::string(point) + ".before_commit");
        if (step.kind == Step::Kind::kFinished) PHASEKEY_CRASH_POINT("response.before_commit");
      },
      start);
  if (s.ok()) {
    if (options_.metrics) options_.metrics->Commit();
    if (!point.empty()) PHASEKEY_CRASH_POINT(std::string(point) + ".after_commit");
    if (step.kind == Step::Kind::kFinished) PHASEKEY_CRASH_POINT("response.after_commit");
  }
  if (s.ok() || deliberate) return step;
  if (s.code() == StatusCode::kFailedPrecondition) return MakeStep(Step::Kind::kLeaseLost, s.message());
  if (s.IsOutcomeUnknown()) return MakeStep(Step::Kind::kUnknownCommit, s.message());
  if (s.IsRetryable() || s.IsDeadlineExceeded()) return MakeStep(Step::Kind::kRetry, s.message());
  return MakeStep(Step::Kind::kUnclassified, s.message());
}

Step RunnerImpl::TransactionWithRetries(const std::function<Step(KeyTx&)>& body, std::string_view point,
                                        pg::Tx::Start start) {
  Step s;
  for (int attempt = 0; attempt < options_.attempts_per_request; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    s = Transaction(body, point, start);
    if (s.kind != Step::Kind::kRetry) return s;
  }
  return s;
}

static const char* StepKindName(Step::Kind k) {
  switch (k) {
    case Step::Kind::kMoved: return "moved";
    case Step::Kind::kFinished: return "finished";
    case Step::Kind::kReply: return "reply";
    case Step::Kind::kLeaseLost: return "lease_lost";
    case Step::Kind::kRetry: return "retry";
    case Step::Kind::kUnclassified: return "unclassified";
    case Step::Kind::kUnknownCommit: return "unknown_commit";
    case Step::Kind::kBug: return "bug";
    case Step::Kind::kStop: return "stop";
  }
  return "unknown";
}

void RunnerImpl::ObservePhase(const Job& job, const Flow::Node& node, const Step& step,
                              std::chrono::steady_clock::time_point started) const {
  if (!options_.metrics) return;
  options_.metrics->Phase(job.flow->name(), node.phase, StepKindName(step.kind),
                          std::chrono::steady_clock::now() - started);
}

Step RunnerImpl::AtomicStep(Job& job, Holder* h, const Flow::Node& node) {
  Step s;
  for (int attempt = 0; attempt < options_.attempts_per_request; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    const auto started = std::chrono::steady_clock::now();
    // BEGIN waits for the phase's first statement, or travels with COMMIT.
    s = Transaction([&](KeyTx& tx) { return AtomicInTx(tx, job, *h, node); }, "phase." + node.phase,
                    pg::Tx::Start::kWithFirstStatement);
    ObservePhase(job, node, s, started);
    if (s.kind == Step::Kind::kMoved) h->lease_from = h->point_reached = started;
    if (s.kind == Step::Kind::kRetry || s.kind == Step::Kind::kUnclassified) continue;
    break;
  }
  if (s.kind == Step::Kind::kMoved) {
    h->fence.point = h->point = s.next;
    h->outcomes.update(s.recorded);
    h->pending = nlohmann::json::object();
  }
  return s;
}

Step RunnerImpl::AtomicInTx(KeyTx& tx, Job& job, const Holder& h, const Flow::Node& node) {
  PhaseContextImpl ctx(job.request.account, job.request.idempotency_key, job.Body(), node.phase, h.stable_id,
                       h.outcomes, h.attempts, h.key_age, job.bucket, &tx);
  if (job.key_trace) ctx.set_traceparent(job.key_trace->Header());
  PhaseResult result = Failure{};
  std::optional<Step> threw;
  const auto ended_it = [&] {
    return MakeStep(Step::Kind::kBug, fmt::format("phase '{}' committed or aborted the engine's transaction itself "
                                                  "(AtomicContext::tx()): rolled back, nothing of it kept",
                                                  node.phase));
  };
  tx.BeginPhase();
  try {
    result = node.atomic(ctx);
  } catch (const pqxx::failure&) {
    if (tx.EndPhase()) return ended_it();
    throw;  // a database failure: the pool classifies it
  } catch (const std::exception& e) {
    threw = MakeStep(Step::Kind::kUnclassified, fmt::format("phase '{}' threw: {}", node.phase, e.what()));
  }
  if (tx.EndPhase()) return ended_it();
  if (threw) return *threw;
  return ApplyAtomicResult(tx, job, h, node, result);
}

Step RunnerImpl::ApplyAtomicResult(KeyTx& tx, const Job& job, const Holder& h, const Flow::Node& node,
                                   const PhaseResult& result) {
  nlohmann::json recorded = h.pending;
  if (const auto* g = std::get_if<GoTo>(&result)) {
    if (std::string bad = BadTarget(*job.flow, node, *g); !bad.empty()) return MakeStep(Step::Kind::kBug, bad);
    if (!g->outcome.is_null()) recorded[std::string(g->next.name())] = g->outcome;
    tx.KeyMove(h.fence, std::string(g->next.name()), recorded, options_.lease);
    Step s = MakeStep(Step::Kind::kMoved);
    s.next = g->next.name();
    s.recorded = std::move(recorded);
    s.ran_phase = true;
    return s;
  }
  const Failure* f = std::get_if<Failure>(&result);
  if (f != nullptr && (f->kind == Failure::Kind::kNeedsOperator || f->kind == Failure::Kind::kNotTaken)) {
    return MakeStep(Step::Kind::kBug,
                    fmt::format("atomic phase '{}' answered as only a foreign phase may: {}", node.phase, f->reason));
  }
  if (f != nullptr && f->kind != Failure::Kind::kTerminal) {
    return MakeStep(Step::Kind::kRetry, ClassOf(*f), fmt::format("phase '{}': {}", node.phase, f->reason));
  }
  const Response& response = f != nullptr ? f->response : std::get<Respond>(result).response;
  if (std::string bad = BadResponse(node, response); !bad.empty()) return MakeStep(Step::Kind::kBug, bad);
  std::optional<std::string> last_error;
  if (f != nullptr) last_error = fmt::format("phase '{}': {}", node.phase, f->reason);
  tx.KeyFinish(h.fence, recorded, response, last_error, ErrorClass::kTerminal);
  Step s = MakeStep(Step::Kind::kFinished);
  s.response = response;
  return s;
}

namespace {

const char* PolicyName(SendPolicy p) {
  switch (p) {
    case SendPolicy::kSend: return "send";
    case SendPolicy::kLookUpFirst: return "look up first";
    case SendPolicy::kLookUpOnly: return "look up only";
  }
  return "send";
}

}  // namespace

SendPolicy RunnerImpl::PolicyFor(const Holder& h, const Flow::Node& node) const {
  const auto now = Holder::Clock::now();
  if (h.reconciling || now - h.created >= options_.give_up_after) return SendPolicy::kLookUpOnly;
  const bool remembered_forever = node.key_retention == std::chrono::seconds::max();
  if (!remembered_forever && now - h.point_reached + options_.provider_retention_margin >= node.key_retention) {
    return SendPolicy::kLookUpFirst;
  }
  return SendPolicy::kSend;
}

Step RunnerImpl::EnsureLease(Holder* h, const Flow::Node& node) {
  const auto now = Holder::Clock::now();
  if (now + node.timeout + options_.lease_margin < h->lease_from + options_.lease) {
    return MakeStep(Step::Kind::kFinished);
  }
  Step renewed = Transaction([&](KeyTx& tx) {
    return tx.KeyRenewLease(h->fence, options_.lease) ? MakeStep(Step::Kind::kFinished)
                                                      : MakeStep(Step::Kind::kLeaseLost);
  });
  if (renewed.kind == Step::Kind::kFinished) h->lease_from = now;
  return renewed;
}

Step RunnerImpl::ForeignStep(Job& job, Holder* h, const Flow::Node& node) {
  Step last;
  for (int attempt = 0; attempt < options_.attempts_per_request; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    const SendPolicy policy = PolicyFor(*h, node);
    if (policy != SendPolicy::kSend && !node.looks_up) {
      return StopStep(KeyState::kNeedsOperator, ErrorClass::kLookupRequired,
                      fmt::format("phase '{}' must {} (the provider may have forgotten its key, or the key is past "
                                  "give_up_after) and has no lookup: not calling the provider again",
                                  node.phase, PolicyName(policy)));
    }
    // Each call must fit in the lease, on every path.
    if (Step lease = EnsureLease(h, node); lease.kind != Step::Kind::kFinished) return lease;
    const auto first_attempt_age =
        std::chrono::duration_cast<std::chrono::seconds>(Holder::Clock::now() - h->point_reached);
    PhaseContextImpl ctx(job.request.account, job.request.idempotency_key, job.Body(), node.phase, h->stable_id,
                         h->outcomes, h->attempts, h->key_age, job.bucket, nullptr, policy, first_attempt_age);
    if (job.key_trace) ctx.set_traceparent(job.key_trace->Header());
    PhaseResult result = Failure{};
    PHASEKEY_CRASH_POINT("foreign." + node.phase + ".before_call");
    const auto started = std::chrono::steady_clock::now();
    try {
      result = node.foreign(ctx);
      PHASEKEY_CRASH_POINT("foreign." + node.phase + ".after_call");
    } catch (const std::exception& e) {
      last = MakeStep(Step::Kind::kUnclassified, fmt::format("phase '{}' threw: {}", node.phase, e.what()));
      ObservePhase(job, node, last, started);
      continue;
    }
    const Failure* f = std::get_if<Failure>(&result);
    if (f != nullptr && f->kind == Failure::Kind::kNeedsOperator) {
      last = StopStep(KeyState::kNeedsOperator, ErrorClass::kNeedsOperator,
                      fmt::format("phase '{}': {}", node.phase, f->reason));
    } else if (f != nullptr && f->kind == Failure::Kind::kNotTaken) {
      last = policy == SendPolicy::kLookUpOnly
                 ? StopStep(
                       KeyState::kDead, ErrorClass::kNotTaken,
                       fmt::format("given up ({}): phase '{}' looked its operation up and it never took "
                                   "effect: {}",
                                   h->reconciling ? "at the failure cap" : "past give_up_after", node.phase, f->reason))
                 : MakeStep(Step::Kind::kBug, fmt::format("phase '{}' answered NotTaken while allowed to send: {}",
                                                          node.phase, f->reason));
    } else if (f != nullptr && f->kind != Failure::Kind::kTerminal) {
      last = MakeStep(Step::Kind::kRetry, ClassOf(*f), fmt::format("phase '{}': {}", node.phase, f->reason));
      ObservePhase(job, node, last, started);
      continue;
    } else {
      last = RecordForeign(job, h, node, result);
    }
    ObservePhase(job, node, last, started);
    return last;
  }
  return last;
}

Step RunnerImpl::RecordForeign(Job& job, Holder* h, const Flow::Node& node, const PhaseResult& result) {
  if (const auto* g = std::get_if<GoTo>(&result)) {
    if (std::string bad = BadTarget(*job.flow, node, *g); !bad.empty()) return MakeStep(Step::Kind::kBug, bad);
    const std::string next(g->next.name());
    if (!g->outcome.is_null()) {
      h->pending[next] = g->outcome;
      h->outcomes[next] = g->outcome;
    }
    h->point = next;
    const Flow::Node* following = job.flow->Find(next);
    if (following != nullptr && following->kind == Flow::PhaseKind::kAtomic) {
      return MakeStep(Step::Kind::kMoved);  // recorded with the next atomic phase
    }
    Step s = TransactionWithRetries(
        [&](KeyTx& tx) {
          tx.KeyMove(h->fence, next, h->pending, options_.lease);
          return MakeStep(Step::Kind::kMoved);
        },
        "record." + node.phase, pg::Tx::Start::kWithFirstStatement);
    if (s.kind == Step::Kind::kMoved) {
      h->fence.point = next;
      h->pending = nlohmann::json::object();
      h->lease_from = h->point_reached = Holder::Clock::now() - options_.lease_margin;
    }
    return s;
  }
  const Failure* f = std::get_if<Failure>(&result);
  const Response& response = f != nullptr ? f->response : std::get<Respond>(result).response;
  if (std::string bad = BadResponse(node, response); !bad.empty()) return MakeStep(Step::Kind::kBug, bad);
  std::optional<std::string> last_error;
  if (f != nullptr) last_error = fmt::format("phase '{}': {}", node.phase, f->reason);
  Step s = TransactionWithRetries(
      [&](KeyTx& tx) {
        tx.KeyFinish(h->fence, h->pending, response, last_error, ErrorClass::kTerminal);
        return MakeStep(Step::Kind::kFinished);
      },
      "record." + node.phase, pg::Tx::Start::kWithFirstStatement);
  if (s.kind == Step::Kind::kFinished) s.response = response;
  return s;
}

}  // namespace phasekey::runner
