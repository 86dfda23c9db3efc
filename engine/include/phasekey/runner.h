// Runner: executes requests of registered flows exactly once per key.
//
// Execute() records the key before any work (claim), runs the flow's phases
// from the key's recovery point under a lease, stores the final response,
// and answers every later request with the same key from what it stored.
// The claim is INSERT ... ON CONFLICT DO NOTHING under READ COMMITTED: the
// unique index on (account, key) is the only serialization point. Every
// later write to the key row is fenced by the owner token and the expected
// recovery point, so a holder that lost its lease can never commit.
//
// Thread-safety: Execute() is thread-safe and blocking (it runs foreign
// phases on the calling thread). It never throws: every failure becomes a
// Reply.
#ifndef PHASEKEY_RUNNER_H_
#define PHASEKEY_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/data_protection.h"
#include "phasekey/database_options.h"
#include "phasekey/fingerprint.h"
#include "phasekey/flow.h"
#include "phasekey/metrics.h"
#include "phasekey/status.h"

namespace phasekey {

// How a Runner runs: its database, leases, retries inside a request,
// re-drive timing, give-up time, buckets, metrics. Every default is
// explained where it is declared; Runner::Open() checks the whole.
struct RunnerOptions {
  // Where the keys live and how connections are pooled; `database.url` is
  // required.
  DatabaseOptions database;

  // How long a holder owns a key without renewing. Renewed at every phase
  // boundary. Must exceed every flow's longest foreign call plus
  // lease_margin, or Open() refuses the flows: a lease that expires during a
  // gateway call would let a second holder call the gateway concurrently.
  std::chrono::milliseconds lease{60000};
  // Slack kept on a lease around a foreign call: before the call, the lease
  // is renewed unless the call's timeout plus this margin still fits in it,
  // so the move after the call commits while the lease holds.
  std::chrono::milliseconds lease_margin{5000};

  // Attempts of one phase inside one request (retryable failures, database
  // serialization failures and deadlocks), with capped exponential backoff
  // and full jitter. 3 attempts at 50/100 ms keep a request under a second
  // of retrying before it answers 503.
  int attempts_per_request = 3;
  // The backoff before the second attempt; it doubles with each attempt
  // after that (each wait a random time between half of it and all of it).
  std::chrono::milliseconds backoff_base{50};
  // The longest backoff between two attempts.
  std::chrono::milliseconds backoff_cap{1000};

  // A key whose phases keep failing in ways the engine cannot classify (an
  // exception a phase did not turn into a Failure, a move to an undeclared
  // point: bugs) is stopped at its max_attempts-th such failure; its last
  // error is kept for the operator. Only a key that provably made no
  // external effect (no foreign phase was ever entered: it is still at an
  // atomic point before any foreign phase, with no foreign outcome
  // recorded) is finished with a stored 500. A key at a foreign phase that
  // can look its operation up (ForeignOptions::looks_up) runs it once more
  // under SendPolicy::kLookUpOnly: found, the flow finishes with it; not
  // there, the key is given up (dead, nothing owed). Any other key is parked
  // in needs_operator, since a provider may hold an effect nobody verified
  // (docs/protocol.md, "Failures"). Retryable failures, unknown
  // outcomes and take-overs by client retries never count: time, not
  // attempts, decides when those keys are given up (give_up_after).
  int max_attempts = 8;

  // After a retryable failure the key is released with a next attempt time
  // for the re-drive worker (a client retry is allowed at once; the 503
  // carries it as Retry-After): capped exponential backoff with jitter on
  // the key's claim count, min(redrive_delay_cap, redrive_delay *
  // 2^(attempts-1)), scaled by a random factor in [0.5, 1]. The 60 s cap
  // keeps a key no more than a minute behind a provider that recovered.
  std::chrono::milliseconds redrive_delay{5000};
  // The longest of those delays (before the random factor).
  std::chrono::milliseconds redrive_delay_cap{60000};

  // The age (from the key's creation) past which the engine starts nothing
  // new for a key, on every path: a key still at `started` is given up
  // (dead, nothing was done); a key at a foreign phase gets one more run
  // under SendPolicy::kLookUpOnly (found: the flow finishes with it; not
  // there: given up, nothing owed; no lookup: parked for an operator); a key
  // past its foreign phases is driven to its response. 12 h: a client that
  // has not come back in half a day has given up, and it is half of
  // Stripe's 24 h key retention.
  std::chrono::seconds give_up_after{12 * 3600};

  // Slack below a foreign phase's declared key retention: once the phase
  // was first attempted longer ago than retention - margin, the provider may
  // have forgotten its key and the phase runs under kLookUpFirst (or the key
  // is parked). One hour covers clock skew between us and the provider and
  // the time a call can take.
  std::chrono::seconds provider_retention_margin{3600};

  // Re-drive buckets: keys are spread over them by account, so a worker can
  // poll one bucket (one shard) at a time. Fixed for a deployment and kept
  // in the database (phasekey.deployment): 0 uses the stored count (16 when
  // none is stored yet); another value is stored by the first process (or
  // `phasekey migrate --buckets`) and must match it afterwards, or Open()
  // refuses. options().buckets is the count in force after Open().
  int buckets = 0;

  // A key found at a recovery point its flow neither has nor declares as an
  // older one (Flow::Resolve: kUnknown) belongs to another version of the
  // flow: during a rolling deploy, the binary that knows the point finishes
  // it. This binary leaves it alone (a client gets 503 with Retry-After;
  // the re-drive worker skips it and counts it in phasekey_stranded_keys)
  // and never counts it as a failure. Once the key has waited at that point
  // this long, it is parked in needs_operator with the reason (by a client
  // retry or the worker). 1 hour: far longer than a rolling deploy, short
  // enough that a forgotten point reaches an operator the same day. Must be
  // positive.
  std::chrono::seconds stranded_after{3600};

  // Optional: where to count requests, claims, phases and fencing (see
  // metrics.h). Null: no metrics.
  std::shared_ptr<Metrics> metrics;

  // A key answered 409 (in progress) and then not sent again by its client
  // for this long is counted (phasekey_suspected_abandoned_after_409_total)
  // and logged: the client probably took the 409 for a final failure
  // (docs/clients.md). Watched in this process's memory, so a retry that
  // reached another process looks like silence here (docs/operations.md).
  // 10 min: far past any backoff a correct client waits (the 409's
  // Retry-After is at most the lease). 0: not watched.
  std::chrono::milliseconds silence_after_409{600000};

  // One JSON line on stderr per answered request: account, key id, flow,
  // recovery point, attempt, duration, reply, and the trace ids of the key's
  // traceparent (Request::traceparent). Off by default (libraries should not
  // talk unasked); the example service turns it on.
  bool log_requests = false;
  // Where the key-encryption keys come from (phasekey/data_protection.h):
  // with a source set, request bodies, responses and foreign outcomes are
  // stored sealed under a data key per account. Without one they are
  // stored as they are, and Open() says so once on stderr. Open() refuses
  // (FailedPrecondition, before any key is touched) a key that does not
  // match the one recorded, or a set of keys that lacks one a stored data
  // key is wrapped by.
  EncryptionOptions encryption;
};

// One request for Runner::Execute(), as a transport received it
// (HttpHandler fills it in). The key row stores the flow, method, path and
// the body's canonical form; a later request with the same key must match
// them all (else Reply::Kind::kMismatch).
struct Request {
  std::string account;  // the tenant; keys are scoped to it
  // 1..255 printable ASCII (checked by the HTTP layer). Empty for a flow
  // with a natural key (Flow::key_source()): the runner takes the key from
  // the body or from path_parameters, and refuses a request that sends one.
  std::string idempotency_key;
  std::string method;  // "POST"
  std::string path;    // "/rides"
  std::string body;    // JSON bytes as received
  // The values of the route's {name} segments (HttpHandler fills them in).
  std::map<std::string, std::string, std::less<>> path_parameters = {};
  // The W3C Trace Context `traceparent` header's value as received ("" when
  // none; HttpHandler fills it in from a single `traceparent` field). The
  // claim that creates the key stores it (in its version-00 form), and every
  // log line about the key carries its trace id (docs/operations.md). A value
  // that is not a valid traceparent is ignored, never refused. A later
  // request with the same key keeps the stored one; its own is logged as
  // `retry_trace_id`.
  std::string traceparent = {};
  // Optional: `body` already canonicalized, CanonicalBody::Of(body) (or
  // HttpRequest::ParsedBody(), which HttpHandler passes on), so that the
  // runner does not canonicalize the same bytes again. When set, the runner
  // takes the body's canonical form, fingerprint and document from it and
  // never reads `body`: the caller vouches that it was made from `body`.
  // Null (the default): the runner canonicalizes `body` itself.
  std::shared_ptr<const CanonicalBody> canonical_body = nullptr;
};

// The re-drive bucket of an account: FNV-1a of its bytes modulo `buckets`.
// Stable across builds and machines; the distribution column of the key
// table (docs/protocol.md).
int AccountBucket(std::string_view account, int buckets);

// A key whose lease the re-drive worker took, with the request stored on it.
// Made by the re-drive worker (RedriveWorker) for Runner::Resume(); an
// application that runs the worker never builds one.
struct ClaimedKey {
  // The key's re-drive bucket (AccountBucket()), where Resume() finds it.
  int bucket = 0;
  // As stored on the key row: the account, the key (as Request had it), the
  // flow's name, and the request's method and path.
  std::string account, idempotency_key, flow, method, path;
  std::string owner_token;  // the lease the worker took
  // The traceparent stored with the key (Request::traceparent, version-00
  // form), "" when none: the re-drive's log lines carry its trace id.
  std::string traceparent = {};
};

// The closed set of answers.
struct Reply {
  // What became of the request; the HTTP status HttpHandler answers with is
  // in parentheses.
  enum class Kind {
    kCompleted,       // this call ran the flow to its response
    kReplayed,        // the key was finished before; stored response
    kInProgress,      // another holder has the lease (409, Retry-After)
    kMismatch,        // the key was used with a different request (422)
    kRetryLater,      // retryable failure; key left for a retry (503, Retry-After)
    kInvalidRequest,  // the body is not acceptable JSON (400)
    kDeadLettered,    // the key was given up (nothing is owed at a provider)
    kNeedsOperator,   // a provider may hold an effect nobody could verify;
                      // parked for an operator, nothing is sent again
    kErased,          // the key's account was erased (EraseAccount): its
                      // stored response is gone (410)
    kInternalError,   // a bug or misconfiguration; nothing was stored
  };
  // Which answer; kInternalError until the runner sets it.
  Kind kind = Kind::kInternalError;
  Response response;  // kCompleted, kReplayed
  // kInProgress: seconds left on the holder's lease; kRetryLater: until the
  // key's next attempt time.
  int retry_after_s = 0;
  std::string detail;  // human-readable reason for non-response kinds
};

// Runs the requests of its flows (see the file comment). Made by Open();
// an interface so that tests and decorators can stand in for it. Owns its
// connection pool; destroying it closes the pool, so no Execute() or
// Resume() may still be running.
class Runner {
 public:
  // Checks the options and the flows (lease against foreign timeouts, unique
  // names, database.call_deadline below lease_margin, so a lease renewal
  // cannot outlive the margin it protects), opens the connection pool and reads (or records) the bucket
  // count (FailedPrecondition when RunnerOptions::buckets disagrees with it).
  static Result<std::unique_ptr<Runner>> Open(RunnerOptions options, std::vector<std::shared_ptr<const Flow>> flows);
  virtual ~Runner() = default;

  // Runs (or replays) `request` through the flow named `flow`.
  virtual Reply Execute(const std::string& flow, const Request& request) = 0;

  // Resumes a key whose lease the caller (the re-drive worker) already took
  // with `key.owner_token`, from its recovery point, through the same code
  // path as a client retry, with the request stored on the key. The key is
  // found in `key.bucket`, as stored.
  // Never creates a key: one that no longer exists is answered
  // kInternalError ("the key no longer exists"), nothing written.
  virtual Reply Resume(const ClaimedKey& key) = 0;

  // The options in force: those given to Open(), with `buckets` replaced
  // by the deployment's count.
  const RunnerOptions& options() const { return options_; }
  // The flows this runner serves, by name.
  virtual std::vector<std::shared_ptr<const Flow>> flows() const = 0;

 protected:
  // For implementations: keeps `options` (as they are in force) for
  // options().
  explicit Runner(RunnerOptions options) : options_(std::move(options)) {}

 private:
  const RunnerOptions options_;
};

}  // namespace phasekey

#endif  // PHASEKEY_RUNNER_H_
