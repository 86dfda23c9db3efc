// Stripe's webhook event format, for phasekey::WebhookEndpoint: turns a
// verified body
//   {"id":"evt_...","type":"charge.succeeded","created":1700000000,
//    "data":{"object":{"id":"ch_...", ...}}}
// into an InboxEvent with provider "stripe", event_id = id, type = type,
// object_id = the payment the event is about (ordering is per payment) and
// the body as the payload: data.object.payment_intent when that is a
// string (a charge or a refund of a PaymentIntent, so that the intent's
// payment_intent.succeeded, charge.succeeded and charge.refunded events are
// all about "pi_..."), else data.object.id. Any event type is accepted;
// what to do with it is the handler's business.
//
// Thread-safety: thread-safe.
#ifndef PHASEKEY_PHASES_STRIPE_EVENT_H_
#define PHASEKEY_PHASES_STRIPE_EVENT_H_

#include <string_view>

#include "phasekey/inbox.h"
#include "phasekey/status.h"

namespace phasekey::phases {

// The InboxEvent::provider of Stripe's events.
inline constexpr std::string_view kStripeProvider = "stripe";

// InvalidArgument, with a one-line reason for the sender, when the body is
// not JSON or lacks a non-empty string id, type or data.object.id.
Result<InboxEvent> ParseStripeEvent(std::string_view body);

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_STRIPE_EVENT_H_
