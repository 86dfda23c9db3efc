// The webhook events the gateway sends, in Stripe's event format:
//   {"id": "evt_...", "object": "event", "type": "charge.succeeded" |
//    "payment_intent.succeeded" | "charge.refunded", "created": <unix seconds>,
//    "data": {"object": <the charge or payment intent object>}}
// Each event is derived from one ledger entry, with an id that depends only
// on the entry (so the same event is derived again after a restart, and a
// receiver recognises the repeat):
//   a charge          -> charge.succeeded, id "evt_succeeded_<charge id>";
//   a payment intent  -> payment_intent.succeeded, id
//                        "evt_succeeded_<intent id>";
//   a refund          -> charge.refunded, id "evt_refunded_<payment id>";
//                        for an intent's refund, as Stripe sends it, the
//                        object is the intent's charge ("ch_" and the
//                        intent's id without "pi_"), naming the intent in
//                        "payment_intent".
#ifndef RIDE_BOOKING_FAKE_GATEWAY_WEBHOOK_EVENTS_H_
#define RIDE_BOOKING_FAKE_GATEWAY_WEBHOOK_EVENTS_H_

#include <string>
#include <vector>

#include "fake_gateway/ledger.h"

namespace fake_gateway {

struct WebhookEvent {
  std::string id;
  std::string type;
  std::string payload;  // the JSON body, exact bytes to sign and send
};

// The events of one entry (none for a decline or a stored error).
std::vector<WebhookEvent> EventsOf(const LedgerEntry& entry);

// Every event the ledger implies, charges before refunds, each in ledger order.
std::vector<WebhookEvent> EventsOfLedger(const std::vector<ChargeRecord>& charges,
                                         const std::vector<RefundRecord>& refunds);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_WEBHOOK_EVENTS_H_
