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

// How an Enqueuer batches and polls; every default is explained below.
struct EnqueuerOptions {
  // Jobs per transaction. 100 keeps each transaction short (the sink runs
  // inside it) while amortising the round trips.
  std::size_t batch_size = 100;
  // Wait between polls when nothing is staged. Batches follow each other
  // without waiting while there is work.
  std::chrono::milliseconds poll_interval{1000};
};

// Moves staged jobs to a JobSink (see the file comment). Made by Open().
class Enqueuer {
 public:
  // `sink` must outlive the enqueuer. Opens one connection of its own and
  // reads the deployment's bucket count. InvalidArgument for a null sink or
  // batch_size 0; a connection failure as classified.
  static Result<std::unique_ptr<Enqueuer>> Open(const DatabaseOptions& database, EnqueuerOptions options,
                                                JobSink* sink);
  // Run() must have returned: Stop() and join its thread first.
  ~Enqueuer();

  // Hands one batch of each bucket (one shard at a time) to the sink.
  // Returns how many jobs were delivered and deleted (0 when none were
  // staged), or the first failure of the sink or the database.
  Result<std::size_t> RunOnce();

  // Runs batches until Stop(); logs one line per batch to stderr.
  void Run();
  // Makes Run() return after the batch in progress (at once if it is
  // waiting). Idempotent; from any thread. Before Run(), Run() does one
  // round of batches and returns.
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
