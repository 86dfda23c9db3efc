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

#include <chrono>
#include <cstddef>
#include <memory>

#include "phasekey/database_options.h"
#include "phasekey/staged_job.h"
#include "phasekey/status.h"

namespace phasekey {

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

  // Jobs delivered (and deleted) so far by this enqueuer. Thread-safe.
  std::size_t delivered() const;

 private:
  class Impl;
  explicit Enqueuer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey

#endif  // PHASEKEY_ENQUEUER_H_
