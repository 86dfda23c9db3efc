#include "pg/statements.h"
#include "phasekey/workers.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <pqxx/pqxx>

#include "pg/deployment.h"
#include "pg/pool.h"
#include "phasekey/crash_point.h"
#include "util/json_log.h"
#include "util/thread_annotations.h"

namespace phasekey {
namespace {

// Thrown inside the batch transaction when the sink refuses the batch.
struct SinkRefused {};

}  // namespace

class Enqueuer::Impl {
 public:
  Impl(std::unique_ptr<pg::Pool> pool, EnqueuerOptions options, JobSink* sink, int buckets)
      : pool_(std::move(pool)), options_(options), sink_(sink), buckets_(buckets) {}

  Result<std::size_t> RunOnce();
  void Run() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);
  std::size_t delivered() const { return delivered_.load(); }

 private:
  Result<std::size_t> RunBucket(int bucket);

  const std::unique_ptr<pg::Pool> pool_;
  const EnqueuerOptions options_;
  JobSink* const sink_;
  const int buckets_;  // the deployment's (phasekey.deployment)
  std::atomic<std::size_t> delivered_{0};
  Mutex mu_;
  std::condition_variable wake_;
  bool stop_ GUARDED_BY(mu_) = false;
};

Result<std::unique_ptr<Enqueuer>> Enqueuer::Open(const DatabaseOptions& database, EnqueuerOptions options,
                                                 JobSink* sink) {
  if (sink == nullptr) return Status::InvalidArgument("enqueuer needs a job sink");
  if (options.batch_size == 0) return Status::InvalidArgument("enqueuer batch_size must be at least 1");
  DatabaseOptions db = database;
  db.pool_size = 1;
  auto pool = pg::Pool::Open(db);
  if (!pool) return pool.error();
  auto buckets = pg::ResolveBuckets(**pool, 0, "enqueuer");
  if (!buckets) return buckets.error();
  return std::unique_ptr<Enqueuer>(new Enqueuer(std::make_unique<Impl>(std::move(*pool), options, sink, *buckets)));
}

Enqueuer::Enqueuer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Enqueuer::~Enqueuer() = default;
Result<std::size_t> Enqueuer::RunOnce() { return impl_->RunOnce(); }
void Enqueuer::Run() { impl_->Run(); }
void Enqueuer::Stop() { impl_->Stop(); }
std::size_t Enqueuer::delivered() const { return impl_->delivered(); }

Result<std::size_t> Enqueuer::Impl::RunOnce() {
  std::size_t total = 0;
  for (int bucket = 0; bucket < buckets_; ++bucket) {
    auto batch = RunBucket(bucket);
    if (!batch) return batch.error();
    total += *batch;
  }
  return total;
}

Result<std::size_t> Enqueuer::Impl::RunBucket(int bucket) {
  std::size_t count = 0;
  Status sink_status;
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    pqxx::result rows = pg::Exec(tx, sql::q::EnqueuerTakeBatch, bucket, static_cast<long long>(options_.batch_size));
    std::vector<StagedJob> jobs;
    for (const auto& r : rows) {
      jobs.push_back(StagedJob{r[0].as<std::int64_t>(), r[1].as<std::string>(),
                               nlohmann::json::parse(r[2].as<std::string>()), r[3].as<std::string>()});
    }
    if (jobs.empty()) return;
    sink_status = sink_->Deliver(jobs);
    if (!sink_status.ok()) throw SinkRefused{};  // roll the delete back: nothing is lost
    PHASEKEY_CRASH_POINT("enqueuer.delivered");
    count = jobs.size();
  });
  if (!sink_status.ok()) return Status::Retryable("job sink refused the batch: " + sink_status.ToString());
  if (!s.ok()) return s;
  delivered_ += count;
  return count;
}

void Enqueuer::Impl::Run() {
  while (true) {
    auto batch = RunOnce();
    if (batch && options_.metrics) options_.metrics->WorkerPolled("enqueuer");
    if (batch && *batch > 0) {
      LogJson({{"level", "info"}, {"msg", "enqueuer batch"}, {"delivered", *batch}, {"total", delivered_.load()}});
    } else if (!batch) {
      LogJson({{"level", "error"}, {"msg", "enqueuer batch failed"}, {"error", batch.error().ToString()}});
    }
    const bool full = batch && *batch == options_.batch_size;
    MutexLock lock(&mu_);
    if (stop_) return;
    if (!full) wake_.wait_for(lock.native(), options_.poll_interval, [this]() REQUIRES(mu_) { return stop_; });
    if (stop_) return;
  }
}

void Enqueuer::Impl::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.notify_all();
}

}  // namespace phasekey
