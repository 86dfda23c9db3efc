// The background workers, one type per runtime role. Each runs its loop on a
// thread of its own until Stop(); any number of each may run against one
// database (they take work with FOR UPDATE SKIP LOCKED, bucket by bucket).
//
//   RedriveWorker  finishes keys that clients abandoned
//   Reaper         deletes finished and expired keys after their retention
//   Enqueuer       hands staged jobs (staged_job.h) to a JobSink
//
// phasekey/tools/worker_group.h runs them in a process until SIGINT/SIGTERM.
#ifndef PHASEKEY_WORKERS_H_
#define PHASEKEY_WORKERS_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "phasekey/database_options.h"
#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "phasekey/staged_job.h"
#include "phasekey/status.h"

namespace phasekey {

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
// key is due). Each round made without error is recorded in the runner's
// metrics (phasekey_worker_last_poll_timestamp_seconds{role="redrive"}).
//
// Thread-safety: RunOnce() and Run() from one thread; Stop() from any.

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
  std::size_t claimed = 0;         // keys whose lease this round took
  std::size_t finished = 0;        // resumed to a stored response
  std::size_t released = 0;        // failed again; released with backoff
  std::size_t lease_lost = 0;      // someone else took them meanwhile
  std::size_t dead_lettered = 0;   // past the failure cap, or given up by the engine
  std::size_t needs_operator = 0;  // parked for an operator (by the engine, at the cap, or stranded)
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

// Reaper: deletes finished keys older than the retention, in bounded
// batches per bucket (FOR UPDATE SKIP LOCKED, so several reapers and the
// live traffic never wait on each other, and a table of millions of keys is
// reaped without long locks). It never deletes an active key. A dead key is
// deleted `dead_retention` after it died; a key parked for an operator only
// if `needs_operator_retention` is set (by default it stays until an
// operator resolves it). It counts the keys it keeps past the retention and
// reports them. It also deletes applied inbox events (phasekey/inbox.h)
// older than the inbox retention, and never a parked one.
//
// Thread-safety: RunOnce() and Run() from one thread; Stop() from any.

// The audit each sweep runs for clients that make a new key for a retry
// (docs/clients.md, mistake 1): a key whose account, flow, method, path and
// request fingerprint repeat an earlier key's within the flow's window is
// counted once (phasekey_suspected_key_regeneration_total{flow}) and logged
// with both keys. Nothing is refused: two identical requests can be meant.
// It reads through the indexes the request path already keeps up, and
// writes only the keys it counted, to a table of its own
// (phasekey.key_audit_counted): each suspect is counted once, by whichever
// reaper finds it first, including pairs that arose while no worker ran (as
// long as the later key is still within its window). Limits
// (docs/operations.md): the count goes to the metrics of the process whose
// reaper counted it; a key that was dead-lettered or parked within the
// window is not seen.
struct RegenerationAuditOptions {
  // Whether each sweep runs the audit. On by default: it writes nothing
  // unless it finds a suspect.
  bool enabled = true;
  // How far apart two keys may be created and still count. 10 min: a
  // client's retries of one operation come within minutes; a person
  // booking the same ride again later is a new operation.
  std::chrono::seconds window{600};
  // Flows with a window of their own.
  std::map<std::string, std::chrono::seconds> window_by_flow;
};

// How long finished keys and applied inbox events are kept, and how the
// Reaper sweeps; every default is explained below.
struct ReaperOptions {
  // How long a finished key is kept, from finished_at: a client retrying
  // within this window gets the stored response. 72 h covers a weekend of
  // client outage; shorter only if clients never retry that late.
  std::chrono::seconds retention{72 * 3600};
  // How long an applied inbox event is kept, from applied_at: a redelivery
  // within this window is recognised as a duplicate; after it, the same event
  // would be applied again. Stripe retries an unacknowledged delivery for up
  // to 3 days, and undelivered events can be fetched and processed by hand
  // for 30 days (its events API keeps that long), so 30 days covers every
  // redelivery the sender documents, with a margin of 27 days over its
  // automatic retries; the rows are small (one per event).
  std::chrono::seconds inbox_retention{30 * 24 * 3600};
  // How long a dead key (given up: by definition nothing is owed at a
  // provider) is kept, from updated_at, the time it was stopped. 30 days:
  // a month for an operator to look at a given-up key (`phasekey keys
  // retry` puts it back) and for its client to have stopped retrying. Once
  // deleted, a retry with that key runs as a new request, which is safe for
  // a dead key because nothing was taken. 0 keeps dead keys forever.
  std::chrono::seconds dead_retention{30 * 24 * 3600};
  // How long a key parked for an operator (needs_operator) is kept, from
  // updated_at, the time it was parked. 0 (the default) keeps it until an
  // operator resolves it: a provider may hold money nobody verified, and
  // deleting the key would forget that (and a retry with it would run as a
  // new request). A positive value deletes such keys that long after they
  // were parked; only for a deployment that reconciles with its providers
  // elsewhere.
  std::chrono::seconds needs_operator_retention{0};
  // Keys (and inbox events) per DELETE: small enough for short locks and little WAL per commit.
  std::size_t batch_size = 1000;
  // Wait between sweeps.
  std::chrono::milliseconds interval{60000};
  // The deployment's bucket count (RunnerOptions::buckets): 0 reads it from
  // the database; another value must match it, or Open() refuses.
  int buckets = 0;
  // Optional: each sweep sets the phasekey_keys{state} gauges and counts
  // the audit's suspects; Run() records each sweep made without error
  // (phasekey_worker_last_poll_timestamp_seconds{role="reaper"}).
  std::shared_ptr<Metrics> metrics;
  // The audit for regenerated keys each sweep runs (above).
  RegenerationAuditOptions regeneration_audit;
};

// What one sweep (RunOnce()) deleted and counted.
struct ReapReport {
  std::size_t deleted = 0;                 // finished keys removed
  std::size_t deleted_dead = 0;            // dead keys removed (past dead_retention)
  std::size_t deleted_needs_operator = 0;  // parked keys removed (past needs_operator_retention)
  std::size_t kept_unfinished = 0;         // active keys created longer ago than the retention
  // Dead keys created longer ago than `retention` that are still kept after
  // this sweep: died less than dead_retention ago, or dead_retention is 0.
  std::size_t kept_dead = 0;
  std::size_t active = 0;                   // all keys in progress
  std::size_t dead = 0;                     // all dead-lettered keys
  std::size_t needs_operator = 0;           // all keys parked for an operator
  std::size_t inbox_deleted = 0;            // applied inbox events removed
  std::size_t inbox_parked = 0;             // parked inbox events (never reaped)
  std::size_t suspected_regenerations = 0;  // keys the audit suspected first in this sweep
};

// Deletes what is past its retention (see the file comment). Made by Open().
class Reaper {
 public:
  // Checks the options, opens one connection of its own
  // (database.pool_size is ignored) and reads the deployment's bucket
  // count. InvalidArgument for batch_size 0, `retention` or
  // `inbox_retention` not positive, or `dead_retention` or
  // `needs_operator_retention` negative; a
  // connection failure as classified; FailedPrecondition when
  // `options.buckets` is not 0 and disagrees with the deployment's count.
  static Result<std::unique_ptr<Reaper>> Open(const DatabaseOptions& database, ReaperOptions options);
  // Run() must have returned: Stop() and join its thread first.
  ~Reaper();

  // One sweep over every bucket.
  Result<ReapReport> RunOnce();
  // Sweeps every `interval` until Stop(); logs one line per sweep.
  void Run();
  // Makes Run() return after the sweep in progress (at once if it is
  // waiting). Idempotent; from any thread. Before Run(), Run() does one
  // sweep and returns.
  void Stop();

 private:
  class Impl;
  explicit Reaper(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Enqueuer: moves staged jobs to a JobSink (see staged_job.h).
//
// Each batch is DELETE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED
// LIMIT n) RETURNING, handed to the sink before COMMIT: a sink failure rolls
// the delete back. Any number of enqueuers may run against one database;
// SKIP LOCKED gives each job to one of them at a time.
//
// Thread-safety: RunOnce() and Run() from one thread; Stop() from any.

// How an Enqueuer batches and polls; every default is explained below.
struct EnqueuerOptions {
  // Jobs per transaction. 100 keeps each transaction short (the sink runs
  // inside it) while amortising the round trips.
  std::size_t batch_size = 100;
  // Wait between polls when nothing is staged. Batches follow each other
  // without waiting while there is work.
  std::chrono::milliseconds poll_interval{1000};
  // Where Run() records each poll made without error
  // (phasekey_worker_last_poll_timestamp_seconds{role="enqueuer"}); null for
  // none.
  std::shared_ptr<Metrics> metrics;
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

#endif  // PHASEKEY_WORKERS_H_
