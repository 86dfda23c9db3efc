// The ride example's webhook handling: the gateway's payment events,
// received through the engine's inbox (phasekey/inbox.h), kept as each
// payment's state in ride_payments (sql/0001_ride_booking.sql), keyed by
// the payment id the ride stores (a PaymentIntent "pi_...", or a charge
// "ch_..." under the Charges API; ParseStripeEvent files an intent's charge
// events under the intent):
//   payment_intent.succeeded, charge.succeeded
//                     -> succeeded (a row appears; a refunded row stays
//                        refunded);
//   charge.refunded   -> refunded; parked while the payment's succeeded
//                        event has not been applied (no row yet);
//   any other type    -> recorded, nothing to do.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_PAYMENT_EVENTS_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_PAYMENT_EVENTS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <pqxx/transaction>

#include "phasekey/inbox.h"

namespace ride_booking {

// The path the gateway delivers to.
inline constexpr char kWebhookPath[] = "/webhooks/gateway";

// An InboxHandler (thread-safe; writes only through `tx`).
phasekey::InboxResult ApplyPaymentEvent(pqxx::transaction_base& tx, const phasekey::InboxEvent& event);

// The worker's sweep: calls inbox->RetryParked() every `interval` on a thread
// of its own, from construction until destruction, for parked events whose
// prerequisite came by another path than an event (an operator's fix, a
// reconciliation). Failures are logged to stderr and retried next time.
// `inbox` must outlive the sweeper.
class ParkedEventSweeper {
 public:
  ParkedEventSweeper(phasekey::Inbox* inbox, std::chrono::milliseconds interval);
  ~ParkedEventSweeper();  // stops and joins
  ParkedEventSweeper(const ParkedEventSweeper&) = delete;
  ParkedEventSweeper& operator=(const ParkedEventSweeper&) = delete;

 private:
  void Loop(phasekey::Inbox* inbox, std::chrono::milliseconds interval);
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_PAYMENT_EVENTS_H_
