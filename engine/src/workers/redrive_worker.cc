#include "pg/statements.h"
#include "phasekey/workers.h"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <cstdio>
#include <latch>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <thread>

#include "pg/pool.h"
#include "phasekey/crash_point.h"
#include "util/json_log.h"
#include "util/thread_annotations.h"
#include "util/trace_parent.h"
#include "workers/redrive_listener.h"

namespace phasekey {
namespace {

// A PostgreSQL text[] literal of the flow names.
std::string FlowArray(const std::vector<std::shared_ptr<const Flow>>& flows) {
  std::string out = "{";
  for (const auto& f : flows) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (char c : f->name()) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

const char* Tally(const Reply& reply, RedriveRound* round) {
  switch (reply.kind) {
    case Reply::Kind::kCompleted:
    case Reply::Kind::kReplayed: ++round->finished; return "finished";
    case Reply::Kind::kInProgress: ++round->lease_lost; return "lease_lost";
    case Reply::Kind::kDeadLettered: ++round->dead_lettered; return "dead_lettered";
    case Reply::Kind::kNeedsOperator: ++round->needs_operator; return "needs_operator";
    default: ++round->released; return "released";
  }
}

// {flow: [points]} of the runner's flows: those they know (Flow::KnownPoints)
// or, with `effect_free`, those no path through a foreign phase reaches.
std::string PointsByFlow(const std::vector<std::shared_ptr<const Flow>>& flows, bool effect_free) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& f : flows) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : f->KnownPoints()) {
      if (!effect_free || f->BeforeAnyForeignPhase(p)) points.push_back(p);
    }
    out[f->name()] = std::move(points);
  }
  return out.dump();
}

// Logs `line` about one key with the trace ids of its stored traceparent
// (`trace_parent`, NULL or "" when it has none).
void LogKey(nlohmann::json line, const pqxx::field& trace_parent) {
  if (!trace_parent.is_null()) {
    if (auto tp = util::ParseTraceParent(trace_parent.c_str())) {
      line["trace_id"] = tp->trace_id;
      line["parent_id"] = tp->parent_id;
    }
  }
  LogJson(std::move(line));
}

void Add(const RedriveRound& r, RedriveRound* total) {
  total->claimed += r.claimed;
  total->finished += r.finished;
  total->released += r.released;
  total->lease_lost += r.lease_lost;
  total->dead_lettered += r.dead_lettered;
  total->needs_operator += r.needs_operator;
  total->stranded += r.stranded;
}

}  // namespace

class RedriveWorker::Impl {
 public:
  Impl(Runner* runner, RedriveOptions options, std::unique_ptr<pg::Pool> pool)
      : runner_(runner),
        options_(options),
        pool_(std::move(pool)),
        flows_(FlowArray(runner->flows())),
        known_points_(PointsByFlow(runner->flows(), false)),
        effect_free_points_(PointsByFlow(runner->flows(), true)),
        threads_(options.concurrency) {}

  ~Impl() { threads_.join(); }

  Result<RedriveRound> RunOnce() EXCLUDES(mu_);
  void Run() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);
  RedriveRound totals() const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return totals_;
  }

 private:
  Status DeadLetter(int bucket, RedriveRound* round);
  // Parks the stranded keys past stranded_after and counts the others into
  // `stranded` ({flow, point} -> keys).
  Status Stranded(int bucket, RedriveRound* round, std::map<std::pair<std::string, std::string>, double>* stranded);
  // Sets phasekey_stranded_keys from one round's count (0 for points gone).
  void ReportStranded(const std::map<std::pair<std::string, std::string>, double>& stranded) EXCLUDES(mu_);
  Result<std::vector<ClaimedKey>> ClaimBatch(int bucket);
  void ResumeAll(const std::vector<ClaimedKey>& keys, RedriveRound* round);
  void WakeAt(std::chrono::steady_clock::time_point when) EXCLUDES(mu_);

  Runner* const runner_;
  const RedriveOptions options_;
  std::unique_ptr<pg::Pool> pool_;
  const std::string flows_;
  const std::string known_points_;        // PointsByFlow, for RedriveClaimBatch and the stranded keys
  const std::string effect_free_points_;  // PointsByFlow(effect_free), for RedriveDeadLetter
  boost::asio::thread_pool threads_;
  mutable Mutex mu_;
  std::condition_variable wake_;
  bool stop_ GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point next_wake_ GUARDED_BY(mu_) = std::chrono::steady_clock::time_point::max();
  RedriveRound totals_ GUARDED_BY(mu_);
  std::set<std::pair<std::string, std::string>> reported_stranded_ GUARDED_BY(mu_);
};

Status RedriveWorker::Impl::DeadLetter(int bucket, RedriveRound* round) {
  std::size_t dead = 0, parked = 0;
  pqxx::result stopped;
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    stopped =
        pg::Exec(tx, sql::q::RedriveDeadLetter, bucket, flows_, options_.max_attempts, 1000LL, effect_free_points_);
  });
  if (!s.ok()) return s;
  for (const auto& r : stopped) {  // after COMMIT: logged once
    const bool is_dead = r[2].as<std::string>() == "dead";
    ++(is_dead ? dead : parked);
    LogKey({{"level", is_dead ? "warn" : "error"},
            {"msg", "key stopped"},
            {"state", r[2].as<std::string>()},
            {"account", r[0].as<std::string>()},
            {"key_id", r[3].as<std::int64_t>()},
            {"flow", r[4].as<std::string>()},
            {"recovery_point", r[5].as<std::string>()},
            {"reason", r[7].as<std::string>()}},
           r[6]);
  }
  round->dead_lettered += dead;
  round->needs_operator += parked;
  if (dead > 0 && runner_->options().metrics) runner_->options().metrics->DeadLetters(static_cast<double>(dead));
  return s;
}

Status RedriveWorker::Impl::Stranded(int bucket, RedriveRound* round,
                                     std::map<std::pair<std::string, std::string>, double>* stranded) {
  const auto& metrics = runner_->options().metrics;
  const double after_s = static_cast<double>(runner_->options().stranded_after.count());
  return pool_->Transact([&](pqxx::transaction_base& tx) {
    for (const auto& r : pg::Exec(tx, sql::q::RedriveParkStranded, bucket, flows_, known_points_, after_s, 1000LL)) {
      ++round->needs_operator;
      if (metrics) metrics->KeyStopped(r[0].as<std::string>(), "needs_operator");
      LogKey({{"level", "error"},
              {"msg", "stranded key parked for an operator"},
              {"bucket", bucket},
              {"account", r[2].as<std::string>()},
              {"key_id", r[3].as<std::int64_t>()},
              {"flow", r[0].as<std::string>()},
              {"recovery_point", r[1].as<std::string>()}},
             r[4]);
    }
    for (const auto& r : pg::Exec(tx, sql::q::RedriveCountStranded, bucket, flows_, known_points_)) {
      const auto n = r[2].as<std::int64_t>();
      round->stranded += static_cast<std::size_t>(n);
      (*stranded)[{r[0].as<std::string>(), r[1].as<std::string>()}] += static_cast<double>(n);
    }
  });
}

void RedriveWorker::Impl::ReportStranded(const std::map<std::pair<std::string, std::string>, double>& stranded) {
  const auto& metrics = runner_->options().metrics;
  if (!metrics) return;
  MutexLock lock(&mu_);
  for (const auto& point : reported_stranded_) {
    if (stranded.count(point) == 0) metrics->StrandedKeys(point.first, point.second, 0);
  }
  reported_stranded_.clear();
  for (const auto& [point, n] : stranded) {
    metrics->StrandedKeys(point.first, point.second, n);
    reported_stranded_.insert(point);
  }
}

Result<std::vector<ClaimedKey>> RedriveWorker::Impl::ClaimBatch(int bucket) {
  std::vector<ClaimedKey> keys;
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    keys.clear();
    pqxx::result rows = pg::Exec(tx, sql::q::RedriveClaimBatch, bucket, flows_, options_.max_attempts,
                                 static_cast<long long>(options_.concurrency),
                                 static_cast<long long>(runner_->options().lease.count()), known_points_);
    for (const auto& r : rows) {
      keys.push_back(ClaimedKey{r[0].as<int>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>(),
                                r[4].as<std::string>(), r[5].as<std::string>(), r[6].as<std::string>(),
                                r[7].as<std::string>()});
    }
  });
  if (!s.ok()) return s;
  return keys;
}

void RedriveWorker::Impl::ResumeAll(const std::vector<ClaimedKey>& keys, RedriveRound* round) {
  std::mutex tally_mu;
  std::latch done(static_cast<std::ptrdiff_t>(keys.size()));
  for (const auto& key : keys) {
    boost::asio::post(threads_, [&, key] {
      Reply reply = runner_->Resume(key);
      const char* result;
      {
        std::lock_guard lock(tally_mu);
        result = Tally(reply, round);
      }
      if (runner_->options().metrics) runner_->options().metrics->Redrive(result);
      done.count_down();
    });
  }
  done.wait();
}

Result<RedriveRound> RedriveWorker::Impl::RunOnce() {
  RedriveRound round;
  std::map<std::pair<std::string, std::string>, double> stranded;
  for (int bucket = 0; bucket < runner_->options().buckets; ++bucket) {
    if (Status s = DeadLetter(bucket, &round); !s.ok()) return s;
    if (Status s = Stranded(bucket, &round, &stranded); !s.ok()) return s;
    while (true) {
      {
        MutexLock lock(&mu_);
        if (stop_) break;
      }
      auto keys = ClaimBatch(bucket);
      if (!keys) return keys.error();
      round.claimed += keys->size();
      if (!keys->empty()) PHASEKEY_CRASH_POINT("redrive.claimed");
      ResumeAll(*keys, &round);
      if (keys->size() < options_.concurrency) break;
    }
  }
  ReportStranded(stranded);
  MutexLock lock(&mu_);
  Add(round, &totals_);
  return round;
}

void RedriveWorker::Impl::WakeAt(std::chrono::steady_clock::time_point when) {
  {
    MutexLock lock(&mu_);
    next_wake_ = std::min(next_wake_, when);
  }
  wake_.notify_all();
}

void RedriveWorker::Impl::Run() {
  std::unique_ptr<workers::RedriveListener> listener;
  if (options_.listen) {
    listener = workers::RedriveListener::Start(pool_->options(), [this](int, std::chrono::milliseconds due_in) {
      WakeAt(std::chrono::steady_clock::now() + due_in + std::chrono::milliseconds(20));
    });
  }
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    auto round = RunOnce();
    if (round && runner_->options().metrics) runner_->options().metrics->WorkerPolled("redrive");
    if (!round) {
      LogJson({{"level", "error"}, {"msg", "redrive round failed"}, {"error", round.error().ToString()}});
    } else if (round->claimed + round->dead_lettered > 0) {
      LogJson({{"level", "info"},
               {"msg", "redrive round"},
               {"claimed", round->claimed},
               {"finished", round->finished},
               {"released", round->released},
               {"lease_lost", round->lease_lost},
               {"dead_lettered", round->dead_lettered},
               {"duration_ms",
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
                    .count()}});
    }
    // Sleep until the poll interval passes or a notified key is due; a new
    // notification may bring the wake-up time forward while we sleep.
    MutexLock lock(&mu_);
    const auto poll_at = std::chrono::steady_clock::now() + options_.poll_interval;
    while (!stop_) {
      const auto deadline = std::min(next_wake_, poll_at);
      if (std::chrono::steady_clock::now() >= deadline) break;
      wake_.wait_until(lock.native(), deadline);
    }
    if (next_wake_ <= std::chrono::steady_clock::now()) next_wake_ = std::chrono::steady_clock::time_point::max();
    if (stop_) break;
  }
  if (listener) listener->Stop();
}

void RedriveWorker::Impl::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.notify_all();
}

Result<std::unique_ptr<RedriveWorker>> RedriveWorker::Open(Runner* runner, RedriveOptions options) {
  if (runner == nullptr) return Status::InvalidArgument("redrive worker needs a runner");
  if (options.concurrency == 0 || options.max_attempts < 1) {
    return Status::InvalidArgument("redrive: concurrency and max_attempts must be at least 1");
  }
  DatabaseOptions db = runner->options().database;
  db.pool_size = 2;
  auto pool = pg::Pool::Open(db);
  if (!pool) return pool.error();
  return std::unique_ptr<RedriveWorker>(new RedriveWorker(std::make_unique<Impl>(runner, options, std::move(*pool))));
}

RedriveWorker::RedriveWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedriveWorker::~RedriveWorker() = default;
Result<RedriveRound> RedriveWorker::RunOnce() { return impl_->RunOnce(); }
void RedriveWorker::Run() { impl_->Run(); }
void RedriveWorker::Stop() { impl_->Stop(); }
RedriveRound RedriveWorker::totals() const { return impl_->totals(); }

}  // namespace phasekey
