#include "runner/runner_impl.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <thread>

#include "flow/flow_masks.h"
#include "pg/deployment.h"
#include "phasekey/fingerprint.h"
#include "runner/key_limits.h"
#include "runner/natural_key.h"
#include "runner/pg_key_store.h"
#include "util/hex.h"
#include "util/json_log.h"
#include "util/planted_bug.h"

namespace phasekey::runner {
namespace {

// Keys the 409 watch holds at most (a few hundred bytes each): a burst of
// 409s beyond it forgets the oldest rather than growing without bound.
constexpr std::size_t kWatched409Keys = 100000;

// The first difference between the stored request and this one, or "".
std::string Mismatch(const ExistingRow& row, const Job& job) {
  if (row.flow != job.flow->name()) return fmt::format("It was first used for flow '{}'.", row.flow);
  if (row.method != job.request.method) return fmt::format("It was first used with method {}.", row.method);
  if (row.path != job.request.path) return fmt::format("It was first used with path {}.", row.path);
  if (row.fingerprint_hex != job.fingerprint_hex) return "It was first used with a different request body.";
  return "";
}

// The planted bug replay_reruns (util/planted_bug.h) runs a replay again under
// its key plus this.
constexpr std::string_view kRerunSuffix = ":rerun";

// 409: another request holds the key; retry the same key after `retry_after_s`.
Reply InProgress(int retry_after_s) {
  return MakeReply(Reply::Kind::kInProgress, "A request with this idempotency key is in progress", retry_after_s);
}

// The answer to a request whose key exists, when it does not involve taking
// the key over: mismatch, replay, dead letter, or in progress (someone
// else's live lease). nullopt: the caller may hold or take the key.
std::optional<Step> AnswerWithoutTakeOver(const ExistingRow& row, const Job& job) {
  Step reply;
  reply.kind = Step::Kind::kReply;
  if (std::string why = Mismatch(row, job); !why.empty()) {
    reply.reply = MakeReply(Reply::Kind::kMismatch, why);
  } else if (row.erased && row.state != KeyState::kActive) {
    reply.reply = MakeReply(Reply::Kind::kErased, "the account's stored data was erased");
  } else if (row.state == KeyState::kFinished) {
    reply.reply.kind = Reply::Kind::kReplayed;
    reply.reply.response = *row.response;
  } else if (row.state == KeyState::kDead) {
    reply.reply = MakeReply(Reply::Kind::kDeadLettered, "the operation was given up: " + row.last_error);
  } else if (row.state == KeyState::kNeedsOperator) {
    reply.reply = MakeReply(Reply::Kind::kNeedsOperator, row.last_error);
  } else if (row.owner_token != job.owner_token && row.leased) {
    reply.reply = InProgress(row.retry_after_s);
  } else {
    return std::nullopt;
  }
  return reply;
}

}  // namespace

RunnerImpl::RunnerImpl(RunnerOptions options, std::map<std::string, std::shared_ptr<const Flow>> flows,
                       std::unique_ptr<KeyStore> keys)
    : Runner(std::move(options)),
      options_(Runner::options()),
      flows_(std::move(flows)),
      keys_(std::move(keys)),
      conflicts_(options_.silence_after_409.count() > 0
                     ? std::make_unique<ConflictWatch>(options_.silence_after_409, kWatched409Keys)
                     : nullptr) {}

std::vector<std::shared_ptr<const Flow>> RunnerImpl::flows() const {
  std::vector<std::shared_ptr<const Flow>> out;
  for (const auto& [name, flow] : flows_) out.push_back(flow);
  return out;
}

Reply RunnerImpl::Execute(const std::string& flow, const Request& request) {
  return Start(flow, request, util::RandomUuid(), KeyOrigin::kFromRequest, std::nullopt);
}

Reply RunnerImpl::Resume(const ClaimedKey& key) {
  // The claim path recognises our own token and continues as the holder.
  return Start(key.flow, Request{key.account, key.idempotency_key, key.method, key.path, "", {}, key.traceparent},
               key.owner_token, KeyOrigin::kStored, key.bucket);
}

static const char* KindName(Reply::Kind k) {
  switch (k) {
    case Reply::Kind::kCompleted: return "completed";
    case Reply::Kind::kReplayed: return "replayed";
    case Reply::Kind::kInProgress: return "in_progress";
    case Reply::Kind::kMismatch: return "mismatch";
    case Reply::Kind::kRetryLater: return "retry_later";
    case Reply::Kind::kInvalidRequest: return "invalid_request";
    case Reply::Kind::kDeadLettered: return "dead_lettered";
    case Reply::Kind::kNeedsOperator: return "needs_operator";
    case Reply::Kind::kErased: return "erased";
    case Reply::Kind::kInternalError: return "internal_error";
  }
  return "unknown";
}

void RunnerImpl::Observe(const Job& job, const Reply& reply, std::chrono::steady_clock::time_point started) const {
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  if (options_.metrics) options_.metrics->Request(job.flow->name(), KindName(reply.kind), took);
  if (!options_.log_requests) return;
  nlohmann::json line = {{"level", "info"},
                         {"msg", "request"},
                         {"account", job.request.account},
                         {"key_id", job.key_id},
                         {"flow", job.flow->name()},
                         {"recovery_point", job.point},
                         {"attempt", job.attempts},
                         {"duration_ms", std::llround(took.count() * 1000)},
                         {"reply", KindName(reply.kind)}};
  if (reply.kind == Reply::Kind::kCompleted || reply.kind == Reply::Kind::kReplayed) {
    line["status"] = reply.response.status;
  }
  if (job.resume) line["redrive"] = true;
  job.AddTrace(&line);
  LogJson(std::move(line));
}

void RunnerImpl::WatchConflicts(const Job& job, const Reply& reply,
                                std::chrono::steady_clock::time_point arrived) const {
  if (!conflicts_) return;
  for (const ConflictWatch::Suspect& s :
       conflicts_->Saw(job.flow->name(), job.request.account, job.request.idempotency_key, job.key_id,
                       reply.kind == Reply::Kind::kInProgress, arrived, std::chrono::steady_clock::now(),
                       job.key_trace ? job.key_trace->trace_id : "")) {
    if (options_.metrics) options_.metrics->SuspectedAbandonedAfter409(s.flow);
    const auto silent =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - s.last_conflict);
    nlohmann::json line = {
        {"level", "warn"},           {"msg", "suspected abandoned after 409: the client never sent this key again"},
        {"account", s.account},      {"flow", s.flow},
        {"key_id", s.key_id},        {"idempotency_key", s.key},
        {"silent_s", silent.count()}};
    if (!s.trace_id.empty()) line["trace_id"] = s.trace_id;
    LogJson(std::move(line));
  }
}

namespace {

// Why the request's fields cannot be recorded ("" when they can). The
// limits are the key row's (sql/migrations); checked here, before any
// statement, rather than by CHECK constraints the server would plan on
// every write.
// `natural`: the key is derived later, from the body or the path, and is
// not checked here.
std::string RequestProblem(const Request& r, bool natural) {
  struct Field {
    const char* name;
    std::string_view value;
    std::size_t max;
  };
  for (const Field& f :
       {Field{"account", r.account, 200},
        Field{"idempotency key", natural ? std::string_view("-") : r.idempotency_key, kMaxKeyCharacters},
        Field{"method", r.method, 16}, Field{"path", r.path, 2000}}) {
    const std::size_t n = Utf8Characters(f.value);
    if (n == 0 || n > f.max) return fmt::format("the {} must have 1 to {} characters (has {})", f.name, f.max, n);
  }
  return "";
}

}  // namespace

Reply RunnerImpl::Start(const std::string& flow, const Request& request, std::string owner_token, KeyOrigin origin,
                        std::optional<int> stored_bucket) {
  auto it = flows_.find(flow);
  if (it == flows_.end()) return MakeReply(Reply::Kind::kInternalError, "no flow named '" + flow + "'");
  const bool natural = origin == KeyOrigin::kFromRequest && it->second->key_source().natural();
  if (std::string why = RequestProblem(request, natural); !why.empty()) {
    return MakeReply(Reply::Kind::kInvalidRequest, why);
  }
  // A re-drive takes the body from the key row, where it is stored (sealed
  // or not) and already canonical (ClaimInTx). A new request's body is
  // canonicalized once, here or by whoever made Request::canonical_body.
  Job job;
  if (origin == KeyOrigin::kFromRequest) {
    job.parsed = request.canonical_body;
    if (!job.parsed) {
      auto made = CanonicalBody::Of(request.body);
      if (!made) return MakeReply(Reply::Kind::kInvalidRequest, "request body: " + made.error().message());
      job.parsed = std::move(*made);
    }
    job.canonical_body = job.parsed->fingerprint().canonical;
    job.fingerprint_hex = job.parsed->fingerprint().sha256_hex;
  }
  try {
    job.flow = it->second.get();
    // Everything but the body, which the job holds as canonical_body.
    job.request = Request{request.account,         request.idempotency_key, request.method, request.path, {},
                          request.path_parameters, request.traceparent};
    job.owner_token = std::move(owner_token);
    job.bucket = stored_bucket.value_or(BucketOf(request.account));
    job.resume = origin == KeyOrigin::kStored;
    job.own_trace = util::ParseTraceParent(request.traceparent);
    if (natural) {
      auto key = NaturalKey(*job.flow, request, job.Body());
      if (!key) return MakeReply(Reply::Kind::kInvalidRequest, key.error().message());
      job.request.idempotency_key = std::move(*key);
    }
    const auto started = std::chrono::steady_clock::now();
    Reply reply = Drive(job);
    Observe(job, reply, started);
    if (origin == KeyOrigin::kFromRequest) WatchConflicts(job, reply, started);
    return reply;
  } catch (const std::exception& e) {
    return MakeReply(Reply::Kind::kInternalError, std::string("unexpected: ") + e.what());
  }
}

Reply RunnerImpl::Drive(Job& job) {
  // A commit whose outcome is unknown is settled by claiming again with the
  // same owner token: the row then tells whether we still hold the key.
  // Foreign outcomes not yet recorded survive the settling: when the row is
  // still where the lost commit found it, they are carried over, so the
  // foreign phase is not called again.
  std::optional<Holder> carried;
  for (int round = 0; round < options_.attempts_per_request + 1; ++round) {
    Holder h;
    Step s = Claim(job, &h);
    if (s.kind == Step::Kind::kUnknownCommit) continue;
    if (s.kind != Step::Kind::kMoved) return Conclude(job, &h, s);
    if (carried && carried->fence.point == h.fence.point && carried->point != h.point) {
      h.point = carried->point;
      h.pending = carried->pending;
      h.outcomes.update(carried->pending);
    }
    carried.reset();
    if (options_.metrics) options_.metrics->Claim(job.flow->name(), h.claim);
    Step r = RunFrom(job, &h);
    if (r.kind == Step::Kind::kUnknownCommit) {
      carried = h;
      continue;
    }
    return Conclude(job, &h, r);
  }
  return MakeReply(Reply::Kind::kRetryLater, "the database did not confirm our commits", 1);
}

Step RunnerImpl::Claim(Job& job, Holder* h) {
  Step last;
  for (int attempt = 0; attempt < options_.attempts_per_request; ++attempt) {
    if (attempt > 0) Backoff(attempt);
    if (!job.resume) {  // the account's data key, before the claim's first statement
      if (Status ready = keys_->PrepareAccount(job.bucket, job.request.account); !ready.ok()) {
        last = MakeStep(Step::Kind::kRetry, ready.message());
        continue;
      }
    }
    *h = Holder{};
    h->lease_from = Holder::Clock::now();
    last = Transaction([&](KeyTx& tx) { return ClaimInTx(tx, job, h, true); }, "claim",
                       pg::Tx::Start::kWithFirstStatement);
    if (last.kind != Step::Kind::kRetry && last.kind != Step::Kind::kUnclassified) break;
  }
  if (last.kind == Step::Kind::kMoved) {
    if (last.ran_phase) {  // the first phase ran with the claim
      h->fence.point = h->point = last.next;
      h->outcomes.update(last.recorded);
      h->point_reached = h->lease_from;
    }
    return last;
  }
  if (last.kind != Step::Kind::kRetry && last.kind != Step::Kind::kUnclassified) return last;
  // The first phase kept failing and rolled the claim back with it: record
  // the key alone, so the failure is counted and the key can be re-driven.
  *h = Holder{};
  h->lease_from = Holder::Clock::now();
  Step held = TransactionWithRetries([&](KeyTx& tx) { return ClaimInTx(tx, job, h, false); }, "claim",
                                     pg::Tx::Start::kWithFirstStatement);
  if (held.kind != Step::Kind::kMoved) return held.kind == Step::Kind::kRetry ? last : held;
  return last;  // we hold the key now; Conclude() gives it back (or finishes it past the cap)
}

Step RunnerImpl::ClaimInTx(KeyTx& tx, Job& job, Holder* h, bool run_first_phase) {
  const Request& rq = job.request;
  ClaimParams p{rq.account,         rq.idempotency_key,  job.flow->name(), rq.method,           rq.path,
                job.canonical_body, job.fingerprint_hex, job.owner_token,  job.flow->version(), job.bucket,
                options_.lease};
  // A new key whose first phase is atomic runs it in this transaction: its
  // row is then written once, at the phase's move or finish, not inserted
  // here and rewritten at commit. A re-drive never inserts.
  const Flow::Node* first = job.flow->Find(kStarted.name());
  p.must_exist = job.resume;
  if (job.own_trace && !job.resume) p.trace_parent = job.own_trace->Header();
  p.defer_insert = !job.resume && run_first_phase && first != nullptr && first->kind == Flow::PhaseKind::kAtomic;
  const auto now = Holder::Clock::now();
  ClaimOutcome outcome = tx.KeyClaim(p);
  if (outcome.busy) {  // its claimant has not committed yet: do not queue behind it
    Step reply;
    reply.kind = Step::Kind::kReply;
    reply.reply = InProgress(1);
    return reply;
  }
  if (auto& claimed = outcome.claimed) {
    h->fence = Fence{p.bucket,
                     rq.account,
                     rq.idempotency_key,
                     claimed->id,
                     job.owner_token,
                     std::string(kStarted.name()),
                     claimed->data_key_id};
    job.key_trace = job.own_trace;  // stored with the row
    job.key_read = true;
    h->stable_id = claimed->stable_id;
    h->attempts = claimed->attempts;
    h->outcomes = claimed->outcomes;
    h->key_age = std::chrono::seconds(claimed->age_s);
    h->created = h->point_reached = h->lease_from;
  } else {
    // Decide on an unlocked read first: a replay, a mismatch or a 409 takes
    // no row lock. Only a possible take-over locks the row and decides again.
    auto row = std::move(outcome.existing);
    if (!row && job.resume) {
      Step gone;
      gone.kind = Step::Kind::kReply;
      gone.reply = MakeReply(Reply::Kind::kInternalError, "the key no longer exists; a re-drive does not create it");
      return gone;
    }
    if (!row) row = tx.KeyGet(p.bucket, rq.account, rq.idempotency_key);  // committed while we waited
    if (!row) return MakeStep(Step::Kind::kRetry, "the key vanished while being claimed");
    job.key_trace = util::ParseTraceParent(row->trace_parent);
    job.key_read = true;
    if (job.resume) {  // the stored request is the request
      job.canonical_body = row->canonical_body;
      job.fingerprint_hex = row->fingerprint_hex;
    }
    if (auto answer = AnswerWithoutTakeOver(*row, job)) {
      if (PlantedBug("replay_reruns") && answer->reply.kind == Reply::Kind::kReplayed &&
          !rq.idempotency_key.ends_with(kRerunSuffix)) {
        job.request.idempotency_key += kRerunSuffix;  // the planted bug: run the flow again, under a new key
        return ClaimInTx(tx, job, h, run_first_phase);
      }
      return *answer;
    }
    if (auto left = LeaveStranded(*row, job)) return *left;
    row = tx.KeyGetForUpdate(p.bucket, rq.account, rq.idempotency_key);
    if (!row) return MakeStep(Step::Kind::kRetry, "the key vanished while being claimed");
    if (auto answer = AnswerWithoutTakeOver(*row, job)) return *answer;
    if (auto left = LeaveStranded(*row, job)) return *left;
    int attempts = row->attempts;
    h->fence = Fence{p.bucket,        rq.account,          rq.idempotency_key, row->id,
                     job.owner_token, row->recovery_point, row->data_key_id};
    if (row->owner_token != job.owner_token) {
      auto taken = tx.KeyTakeOver(p.bucket, rq.account, rq.idempotency_key, job.owner_token, options_.lease);
      if (!taken) return MakeStep(Step::Kind::kRetry, "lost the race to take over the key");
      attempts = *taken;
      h->claim = "taken_over";
    } else {
      // The re-drive worker took the lease when it claimed the batch; renew
      // it now, so the phases get a whole lease from here.
      if (!tx.KeyRenewLease(h->fence, options_.lease)) return MakeStep(Step::Kind::kLeaseLost);
      h->claim = "own";
    }
    h->stable_id = row->stable_id;
    h->attempts = attempts;
    h->failures = row->failures;
    h->outcomes = row->outcomes;
    h->key_age = std::chrono::seconds(row->age_s);
    // Ages are whole seconds rounded down: one more keeps the instants early.
    h->created = now - std::chrono::seconds(row->age_s + 1);
    h->point_reached = now - std::chrono::seconds(row->point_age_s + 1);
    if (row->erased) {
      // Unfinished, and its data key destroyed (a request that met the
      // account's erasure): nothing to resume from, and a provider may have
      // been called. Never re-sent blindly.
      h->point = h->fence.point;
      return StopStep(KeyState::kNeedsOperator, ErrorClass::kErased,
                      "the account was erased while this key was unfinished; a provider may hold its effect");
    }
  }
  h->point = h->fence.point;
  if (auto stop = ResolvePoint(job, h)) return *stop;
  if (h->key_age >= options_.give_up_after && h->point == kStarted.name()) {
    // Nothing was started and the client has long gone: give the key up
    // (Conclude() stops it, fenced, once this claim commits).
    return StopStep(
        KeyState::kDead, ErrorClass::kGivenUp,
        fmt::format("given up: older than give_up_after ({} s) with nothing started", options_.give_up_after.count()));
  }
  const Flow::Node* node = job.flow->Find(h->point);
  if (run_first_phase && node != nullptr && node->kind == Flow::PhaseKind::kAtomic) {
    return AtomicInTx(tx, job, *h, *node);
  }
  Step held;
  held.kind = Step::Kind::kMoved;
  held.next = h->point;
  return held;
}

Step RunnerImpl::RunFrom(Job& job, Holder* h) {
  while (true) {
    const Flow::Node* node = job.flow->Find(h->point);
    if (node == nullptr) {
      return MakeStep(Step::Kind::kBug,
                      fmt::format("recovery point '{}' is not part of flow '{}'", h->point, job.flow->name()));
    }
    Step s = node->kind == Flow::PhaseKind::kAtomic ? AtomicStep(job, h, *node) : ForeignStep(job, h, *node);
    if (s.kind != Step::Kind::kMoved) return s;
  }
}

Reply RunnerImpl::Conclude(Job& job, Holder* h, const Step& step) {
  job.key_id = h->fence.id;
  job.point = step.kind == Step::Kind::kFinished ? std::string(kFinished.name()) : h->point;
  job.attempts = h->attempts;
  if (step.kind == Step::Kind::kLeaseLost && options_.metrics) options_.metrics->FencingRejection(job.flow->name());
  switch (step.kind) {
    case Step::Kind::kFinished: return Completed(step.response);
    case Step::Kind::kReply: return step.reply;
    case Step::Kind::kLeaseLost: return MakeReply(Reply::Kind::kInProgress, "another holder took over this key", 1);
    case Step::Kind::kRetry:
    case Step::Kind::kUnclassified:
    case Step::Kind::kBug:
      if (h->fence.id == 0) return MakeReply(Reply::Kind::kRetryLater, step.reason, 1);
      return GiveUp(job, h, step);
    case Step::Kind::kStop: return Stop(job, h, step);
    case Step::Kind::kMoved:
    case Step::Kind::kUnknownCommit: break;
  }
  return MakeReply(Reply::Kind::kRetryLater, step.reason, 1);
}

void RunnerImpl::Backoff(int attempt) const {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::chrono::milliseconds ceiling = options_.backoff_base * (1LL << std::min(attempt - 1, 20));
  ceiling = std::min(ceiling, options_.backoff_cap);
  std::uniform_int_distribution<long long> jitter(ceiling.count() / 2, std::max<long long>(ceiling.count(), 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(jitter(rng)));
}

std::chrono::milliseconds RunnerImpl::RedriveDelay(int attempts) const {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::chrono::milliseconds d = options_.redrive_delay * (1LL << std::clamp(attempts - 1, 0, 20));
  d = std::min(d, options_.redrive_delay_cap);
  std::uniform_real_distribution<double> factor(0.5, 1.0);
  return std::chrono::milliseconds(static_cast<long long>(static_cast<double>(d.count()) * factor(rng)));
}

int RunnerImpl::BucketOf(const std::string& account) const { return AccountBucket(account, options_.buckets); }

}  // namespace phasekey::runner

namespace phasekey {

int AccountBucket(std::string_view account, int buckets) {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : account) h = (h ^ c) * 16777619u;
  return static_cast<int>(h % static_cast<std::uint32_t>(buckets < 1 ? 1 : buckets));
}

Result<std::unique_ptr<Runner>> Runner::Open(RunnerOptions options, std::vector<std::shared_ptr<const Flow>> flows) {
  if (options.lease.count() <= 0 || options.attempts_per_request < 1 || options.max_attempts < 1 ||
      options.buckets < 0 || options.buckets > 32767 || options.give_up_after.count() <= 0 ||
      options.provider_retention_margin.count() < 0 || options.stranded_after.count() <= 0) {
    return Status::InvalidArgument(
        "runner options: lease, give_up_after and stranded_after must be positive, attempts_per_request and "
        "max_attempts at least 1, buckets in 0..32767, provider_retention_margin not negative");
  }
  if (options.database.call_deadline >= options.lease_margin) {
    return Status::InvalidArgument(fmt::format(
        "runner options: database.call_deadline ({} ms) must be below lease_margin ({} ms): a lease renewal or a "
        "recorded move may take the whole call deadline, which the margin must cover",
        options.database.call_deadline.count(), options.lease_margin.count()));
  }
  std::map<std::string, std::shared_ptr<const Flow>> by_name;
  for (auto& f : flows) {
    if (f == nullptr) return Status::InvalidArgument("null flow");
    const auto needed = f->LongestForeignTimeout() + options.lease_margin;
    if (f->LongestForeignTimeout().count() > 0 && needed >= options.lease) {
      return Status::InvalidArgument(fmt::format(
          "flow '{}': the lease ({} ms) must outlast its longest foreign call ({} ms) plus the margin ({} ms)",
          f->name(), options.lease.count(), f->LongestForeignTimeout().count(), options.lease_margin.count()));
    }
    if (!by_name.emplace(f->name(), f).second) return Status::InvalidArgument("two flows named " + f->name());
  }
  auto pool = pg::Pool::Open(options.database);
  if (!pool) return pool.error();
  auto buckets = pg::ResolveBuckets(**pool, options.buckets, "runner");
  if (!buckets) return buckets.error();
  options.buckets = *buckets;
  auto sealer = runner::OpenSealer(options.encryption, **pool);
  if (!sealer) return sealer.error();
  // The fields each flow masks, for the operator's tools (flow/flow_masks.h).
  Status masks = (*pool)->Transact([&](pg::Tx& tx) {
    if (Status s = flow::RecordFlowMasks(tx, flows); !s.ok()) throw pg::Rollback{s};
  });
  if (!masks.ok()) return masks;
  return std::unique_ptr<Runner>(new runner::RunnerImpl(std::move(options), std::move(by_name),
                                                        runner::NewPgKeyStore(std::move(*pool), std::move(*sealer))));
}

}  // namespace phasekey
