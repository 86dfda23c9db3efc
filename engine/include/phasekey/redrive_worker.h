// RedriveWorker: finishes keys that clients abandoned.
//
// Each round, per bucket (one shard at a time): keys whose unclassified
// failures reached the cap go to the dead-letter state; then a batch of due
// keys (active,
// lease free or expired, next_attempt_at passed) is claimed with FOR UPDATE
// SKIP LOCKED, each with a new owner token, and resumed through
// Runner::Resume, the code path of a client retry, with the stored request.
// Keys in flight are bounded by `concurrency` (an Asio thread pool runs the
// blocking resumes). Any number of workers may run: SKIP LOCKED and the
// lease mean no key is ever driven by two holders at once.
//
// Between rounds the worker sleeps `poll_interval`, or less when LISTEN/
// NOTIFY tells it a key was released for re-drive (it then wakes when that
// key is due).
//
// Thread-safety: RunOnce() and Run() from one thread; Stop() from any.
#ifndef PHASEKEY_REDRIVE_WORKER_H_
#define PHASEKEY_REDRIVE_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>

#include "phasekey/runner.h"
#include "phasekey/status.h"

namespace phasekey {

// How a RedriveWorker polls and how many keys it drives at once; every
// default is explained below.
struct RedriveOptions {
  // Keys resumed at once by this process. Each holds a database connection
  // only during its short transactions, and a thread during foreign calls.
  std::size_t concurrency = 4;
  // Wait between rounds when there is nothing to do and no notification.
  std::chrono::milliseconds poll_interval{1000};
  // Unclassified failures (bugs: exceptions a phase did not classify) after
  // which a key is stopped instead of re-driven: dead-lettered when it
  // provably made no external effect (Flow::BeforeAnyForeignPhase, nothing
  // recorded), otherwise parked in needs_operator. Retryable failures,
  // unknown outcomes and client take-overs never count: how long a key is
  // tried is decided by time, in the engine (RunnerOptions::give_up_after),
  // and the provider's memory bounds every resend (SendPolicy).
  int max_attempts = 10;
  // LISTEN for releases to wake early.
  bool listen = true;
};

// What a round did with the keys it claimed (also the running totals()).
struct RedriveRound {
  std::size_t claimed = 0;        // keys whose lease this round took
  std::size_t finished = 0;       // resumed to a stored response
  std::size_t released = 0;       // failed again; released with backoff
  std::size_t lease_lost = 0;     // someone else took them meanwhile
  std::size_t dead_lettered = 0;  // past the failure cap, or given up by the engine
  std::size_t needs_operator = 0; // parked for an operator (by the engine, at the cap, or stranded)
  // Active keys at a recovery point the runner's flows neither have nor map
  // (another version's, RunnerOptions::stranded_after): never claimed, only
  // counted (phasekey_stranded_keys); those past stranded_after are parked
  // and counted in needs_operator instead.
  std::size_t stranded = 0;
};

// Re-drives abandoned keys through a Runner (see the file comment). Made by
// Open().
class RedriveWorker {
 public:
  // `runner` must outlive the worker; the worker polls the runner's buckets.
  // InvalidArgument for a null runner, concurrency 0 or max_attempts below
  // 1; a connection failure as classified. The worker opens two connections
  // of its own, with the runner's database options.
  static Result<std::unique_ptr<RedriveWorker>> Open(Runner* runner, RedriveOptions options);
  // Run() must have returned: Stop() and join its thread first.
  ~RedriveWorker();

  // One round over every bucket; returns what it did.
  Result<RedriveRound> RunOnce();
  // Rounds until Stop(); one log line per round that did something. On
  // Stop() it takes no new keys and returns once the keys in flight are
  // finished or released.
  void Run();
  // Makes Run() return (see above). Idempotent; from any thread. Before
  // Run(), Run() does one round and returns.
  void Stop();

  // The sum of every round so far, RunOnce() and Run() alike. Thread-safe.
  RedriveRound totals() const;

 private:
  class Impl;
  explicit RedriveWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey

#endif  // PHASEKEY_REDRIVE_WORKER_H_
