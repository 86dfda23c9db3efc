// Enqueuer: moves staged jobs to a JobSink (see staged_job.h).
//
// Each batch is DELETE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED
// LIMIT n) RETURNING, handed to the sink before COMMIT: a sink failure rolls
// the delete back. Any number of enqueuers may run against one database;
// SKIP LOCKED gives each job to one of them at a time.
//
// Thread-safety: RunOnce() and Run() from one thread; Stop() from any.
#ifndef PHASEKEY_ENQUEUER_H_
#define PHASEKEY_ENQUEUER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>

#include "phasekey/database_options.h"
#include "phasekey/staged_job.h"
#include "phasekey/status.h"

namespace phasekey {

namespace pg {
class Pool;
}

struct EnqueuerOptions {
  // Jobs per transaction. 100 keeps each transaction short (the sink runs
  // inside it) while amortising the round trips.
  std::size_t batch_size = 100;
  // Wait between polls when nothing is staged. Batches follow each other
  // without waiting while there is work.
  std::chrono::milliseconds poll_interval{1000};
};

class Enqueuer {
 public:
  // `sink` must outlive the enqueuer.
  static Result<std::unique_ptr<Enqueuer>> Open(const DatabaseOptions& database, EnqueuerOptions options,
                                                JobSink* sink);
  ~Enqueuer();

  // Hands one batch of each bucket (one shard at a time) to the sink.
  // Returns how many jobs were delivered and deleted (0 when none were
  // staged), or the first failure of the sink or the database.
  Result<std::size_t> RunOnce();

  // Runs batches until Stop(); logs one line per batch to stderr.
  void Run();
  void Stop();

  std::size_t delivered() const { return delivered_.load(); }

 private:
  Enqueuer(std::unique_ptr<pg::Pool> pool, EnqueuerOptions options, JobSink* sink, int buckets);
  Result<std::size_t> RunBucket(int bucket);
  std::unique_ptr<pg::Pool> pool_;
  const EnqueuerOptions options_;
  JobSink* const sink_;
  const int buckets_;  // the deployment's (phasekey.deployment)
  std::atomic<std::size_t> delivered_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // GUARDED_BY(mu_)
};

}  // namespace phasekey

#endif  // PHASEKEY_ENQUEUER_H_
