#include "pg/statements.h"
#include "phasekey/workers.h"

#include <condition_variable>
#include <cstdio>
#include <pqxx/pqxx>

#include "pg/deployment.h"
#include "pg/pool.h"
#include "util/json_log.h"
#include "util/thread_annotations.h"
#include "workers/key_audit.h"

namespace phasekey {

class Reaper::Impl {
 public:
  Impl(std::unique_ptr<pg::Pool> pool, ReaperOptions options)
      : pool_(std::move(pool)), options_(options), audit_(options.regeneration_audit, options.metrics) {}

  Result<ReapReport> RunOnce();
  void Run() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

 private:
  Status SweepBucket(int bucket, ReapReport* report);
  // Runs the named batch DELETE `query` (bucket, retention in s, batch size)
  // until a batch comes back short; adds the rows deleted to *deleted.
  Status DeleteInBatches(sql::QueryRef<3> query, int bucket, std::chrono::seconds retention, std::size_t* deleted);
  Status SweepInbox(int bucket, ReapReport* report);

  const std::unique_ptr<pg::Pool> pool_;
  const ReaperOptions options_;  // buckets resolved by Open()
  workers::KeyAudit audit_;      // used by RunOnce's thread only
  Mutex mu_;
  std::condition_variable wake_;
  bool stop_ GUARDED_BY(mu_) = false;
};

Result<std::unique_ptr<Reaper>> Reaper::Open(const DatabaseOptions& database, ReaperOptions options) {
  if (options.batch_size == 0 || options.retention.count() <= 0 || options.inbox_retention.count() <= 0) {
    return Status::InvalidArgument("reaper: batch_size must be at least 1, retentions positive");
  }
  if (options.dead_retention.count() < 0 || options.needs_operator_retention.count() < 0) {
    return Status::InvalidArgument("reaper: dead_retention and needs_operator_retention must be 0 (keep) or positive");
  }
  bool windows_positive = options.regeneration_audit.window.count() > 0;
  for (const auto& [flow, window] : options.regeneration_audit.window_by_flow) windows_positive &= window.count() > 0;
  if (!windows_positive) return Status::InvalidArgument("reaper: regeneration audit windows must be positive");
  DatabaseOptions db = database;
  db.pool_size = 1;
  auto pool = pg::Pool::Open(db);
  if (!pool) return pool.error();
  auto buckets = pg::ResolveBuckets(**pool, options.buckets, "reaper");
  if (!buckets) return buckets.error();
  options.buckets = *buckets;
  return std::unique_ptr<Reaper>(new Reaper(std::make_unique<Impl>(std::move(*pool), options)));
}

Reaper::Reaper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reaper::~Reaper() = default;
Result<ReapReport> Reaper::RunOnce() { return impl_->RunOnce(); }
void Reaper::Run() { impl_->Run(); }
void Reaper::Stop() { impl_->Stop(); }

Status Reaper::Impl::DeleteInBatches(sql::QueryRef<3> query, int bucket, std::chrono::seconds retention,
                                     std::size_t* deleted) {
  const auto retention_s = static_cast<double>(retention.count());
  std::size_t batch = options_.batch_size;
  while (batch == options_.batch_size) {  // one short transaction per batch
    Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
      batch = pg::Exec(tx, query, bucket, retention_s, static_cast<long long>(options_.batch_size)).size();
    });
    if (!s.ok()) return s;
    *deleted += batch;
  }
  return Status::OK();
}

Status Reaper::Impl::SweepBucket(int bucket, ReapReport* report) {
  if (Status s = DeleteInBatches(sql::q::ReaperDeleteBatch, bucket, options_.retention, &report->deleted); !s.ok()) {
    return s;
  }
  if (options_.dead_retention.count() > 0) {  // 0: dead keys are kept forever
    Status s = DeleteInBatches(sql::q::ReaperDeleteDeadBatch, bucket, options_.dead_retention, &report->deleted_dead);
    if (!s.ok()) return s;
  }
  if (options_.needs_operator_retention.count() > 0) {  // 0: kept until an operator resolves them
    Status s = DeleteInBatches(sql::q::ReaperDeleteNeedsOperatorBatch, bucket, options_.needs_operator_retention,
                               &report->deleted_needs_operator);
    if (!s.ok()) return s;
  }
  const auto retention_s = static_cast<double>(options_.retention.count());
  return pool_->Transact([&](pqxx::transaction_base& tx) {
    pqxx::row r = pg::Exec1(tx, sql::q::ReaperCountKept, bucket, retention_s);
    report->kept_unfinished += r[0].as<std::size_t>();
    report->kept_dead += r[1].as<std::size_t>();
    pqxx::row states = pg::Exec1(tx, sql::q::ReaperCountStates, bucket);
    report->active += states[0].as<std::size_t>();
    report->dead += states[1].as<std::size_t>();
    report->needs_operator += states[2].as<std::size_t>();
  });
}

Status Reaper::Impl::SweepInbox(int bucket, ReapReport* report) {
  Status s = DeleteInBatches(sql::q::ReaperDeleteInboxBatch, bucket, options_.inbox_retention, &report->inbox_deleted);
  if (!s.ok()) return s;
  return pool_->Transact([&](pqxx::transaction_base& tx) {
    report->inbox_parked += pg::Exec1(tx, sql::q::ReaperCountParkedInbox, bucket)[0].as<std::size_t>();
  });
}

Result<ReapReport> Reaper::Impl::RunOnce() {
  ReapReport report;
  for (int b = 0; b < options_.buckets; ++b) {
    if (Status s = SweepBucket(b, &report); !s.ok()) return s;
    if (Status s = SweepInbox(b, &report); !s.ok()) return s;
    if (options_.regeneration_audit.enabled) {
      auto counted = audit_.Run(*pool_, b);
      if (!counted) return counted.error();
      report.suspected_regenerations += *counted;
    }
  }
  if (options_.metrics) {
    options_.metrics->Keys("active", static_cast<double>(report.active));
    options_.metrics->Keys("dead", static_cast<double>(report.dead));
    options_.metrics->Keys("needs_operator", static_cast<double>(report.needs_operator));
    options_.metrics->InboxParked(static_cast<double>(report.inbox_parked));
  }
  return report;
}

void Reaper::Impl::Run() {
  while (true) {
    auto r = RunOnce();
    if (r && options_.metrics) options_.metrics->WorkerPolled("reaper");
    if (r) {
      LogJson({{"level", "info"},
               {"msg", "reaper sweep"},
               {"deleted", r->deleted},
               {"deleted_dead", r->deleted_dead},
               {"deleted_needs_operator", r->deleted_needs_operator},
               {"kept_unfinished_past_retention", r->kept_unfinished},
               {"kept_dead_past_retention", r->kept_dead},
               {"needs_operator", r->needs_operator},
               {"inbox_deleted", r->inbox_deleted},
               {"inbox_parked", r->inbox_parked},
               {"suspected_key_regenerations", r->suspected_regenerations}});
    } else {
      LogJson({{"level", "error"}, {"msg", "reaper sweep failed"}, {"error", r.error().ToString()}});
    }
    MutexLock lock(&mu_);
    if (wake_.wait_for(lock.native(), options_.interval, [this]() REQUIRES(mu_) { return stop_; })) return;
  }
}

void Reaper::Impl::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.notify_all();
}

}  // namespace phasekey
