// Inbox: inbound events (a gateway's webhooks) applied exactly once.
//
// Gateways deliver the same event more than once and out of order. Receive()
// records the event by (provider, event id) in the same transaction as the
// handler's own writes, so the event is applied exactly once however often it
// arrives; a duplicate is acknowledged at once, without running the handler.
// The primary key is the only serialization point between concurrent
// deliveries of one event (INSERT ... ON CONFLICT DO NOTHING; never
// check-then-insert).
//
// Ordering: each event names an object (a charge id). Receive() first takes a
// transaction-scoped advisory lock on (provider, object), so events of one
// object are handled one at a time. A handler that finds a prerequisite
// missing (a charge.refunded before its charge.succeeded) returns Park: its
// writes are rolled back (to a savepoint), the event is committed as parked
// and acknowledged. Whenever another event of the same object is applied,
// its parked events are retried in the same transaction, in arrival order;
// RetryParked() is the sweep a worker calls for the rest. Parked events are
// never lost and never reaped.
//
// The closed set of event states (phasekey.inbox_state):
//   applied  the handler's writes committed with the row;
//   parked   recorded and acknowledged, waiting for its prerequisite.
// A handler's Retry (or exception) records nothing: the sender's redelivery
// runs it again.
//
// Example (the ride example's payment states, docs/inbox.md):
//
//   auto inbox = phasekey::Inbox::Open(db, [](pqxx::transaction_base& tx, const phasekey::InboxEvent& e) {
//     if (e.type == "charge.succeeded") { /* upsert succeeded */ return phasekey::InboxResult::Applied(); }
//     if (/* no row for e.object_id yet */) return phasekey::InboxResult::Park("charge not succeeded yet");
//     /* set refunded */ return phasekey::InboxResult::Applied();
//   });
//   auto receipt = (*inbox)->Receive(event);  // 200 unless !receipt
//
// Thread-safety: Receive() and RetryParked() are thread-safe; the handler is
// called on the calling thread, possibly from several threads at once (for
// different objects).
#ifndef PHASEKEY_INBOX_H_
#define PHASEKEY_INBOX_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <pqxx/transaction>

#include "phasekey/database_options.h"
#include "phasekey/metrics.h"
#include "phasekey/status.h"

namespace phasekey {

// One inbound event. Every field but payload must be non-empty (at most 255
// characters; the provider at most 100).
struct InboxEvent {
  std::string provider;   // who sent it: "stripe"
  std::string event_id;   // the sender's id, unique per provider: "evt_..."
  std::string object_id;  // what it is about; ordering is per object: "ch_..."
  std::string type;       // "charge.succeeded"
  std::string payload;    // the body as received (stored for parked retries)
};

// What a handler returns.
class InboxResult {
 public:
  // Which of the three factories below made it.
  enum class Kind { kApplied, kPark, kRetry };
  // The handler's writes are to be committed with the event.
  static InboxResult Applied() { return {Kind::kApplied, ""}; }
  // A prerequisite is missing: roll the handler's writes back, keep the event
  // parked until another event of its object is applied (or the sweep).
  static InboxResult Park(std::string reason) { return {Kind::kPark, std::move(reason)}; }
  // Record nothing; the sender's redelivery runs the handler again.
  static InboxResult Retry(std::string reason) { return {Kind::kRetry, std::move(reason)}; }

  // What the handler decided.
  Kind kind() const { return kind_; }
  // Why it parked or asked for a retry (stored with a parked event, in the
  // Status of a Retry); empty for Applied().
  const std::string& reason() const { return reason_; }

 private:
  InboxResult(Kind kind, std::string reason) : kind_(kind), reason_(std::move(reason)) {}
  Kind kind_;
  std::string reason_;
};

// Applies one event inside `tx` (READ COMMITTED, the object's lock held). Do
// not commit or abort `tx`. Throwing counts as Retry. The handler may run
// again for the same event (after a Retry, a Park, a crash before commit), so
// it must change nothing outside `tx`.
using InboxHandler = std::function<InboxResult(pqxx::transaction_base& tx, const InboxEvent& event)>;

// How an Inbox runs; every default is explained below.
struct InboxOptions {
  // Connections of the inbox's own pool (pool_size of `database` is ignored).
  // 4: a webhook endpoint sees a fraction of the API's traffic, and events
  // of one object queue on its lock rather than on the pool.
  std::size_t pool_size = 4;
  // Objects the sweep (RetryParked) visits per call: bounds one call's work.
  std::size_t sweep_objects = 100;
  // Optional: where to count deliveries and unparked events (metrics.h).
  // Null: no metrics.
  std::shared_ptr<Metrics> metrics;
};

// How Receive() disposed of an event; each is acknowledged (HTTP 200).
enum class InboxDelivery {
  kApplied,    // the handler ran and its writes committed with the event
  kDuplicate,  // recorded before; the handler did not run
  kParked,     // recorded as parked; the handler's writes were rolled back
};

// What Receive() did with an acknowledged event.
struct InboxReceipt {
  InboxDelivery delivery = InboxDelivery::kApplied;  // how the event was disposed of
  std::string park_reason;                           // kParked only
  std::size_t unparked = 0;                          // parked events of the object applied in the same transaction
};

// What one RetryParked() call did.
struct InboxSweepReport {
  std::size_t objects = 0;       // objects with parked events visited
  std::size_t applied = 0;       // parked events applied
  std::size_t still_parked = 0;  // parked events that parked again or failed
};

// Applies inbound events exactly once (see the file comment). Owns its
// connection pool; made by Open().
class Inbox {
 public:
  // Checks the options and opens the pool (failing fast on a bad URL).
  // InvalidArgument without a handler.
  static Result<std::unique_ptr<Inbox>> Open(const DatabaseOptions& database, InboxHandler handler,
                                             InboxOptions options = {});
  ~Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Records and applies `event` (see the file comment). Errors, all meaning
  // "not acknowledged, deliver again":
  //   InvalidArgument  a field is empty or too long (nothing recorded);
  //   Retryable        the handler returned Retry or threw (message: its
  //                    reason), or a transient database failure;
  //   OutcomeUnknown / DeadlineExceeded / Terminal  as classified from the
  //                    database (a redelivery finds out: a duplicate if the
  //                    commit happened).
  Result<InboxReceipt> Receive(const InboxEvent& event);

  // The sweep: retries the parked events of up to sweep_objects objects (the
  // least retried first, so every object gets its turn), one transaction per
  // object, in arrival order within each.
  Result<InboxSweepReport> RetryParked();

 private:
  class Impl;
  explicit Inbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "applied", "duplicate" or "parked".
std::string_view InboxDeliveryName(InboxDelivery delivery);

}  // namespace phasekey

#endif  // PHASEKEY_INBOX_H_
