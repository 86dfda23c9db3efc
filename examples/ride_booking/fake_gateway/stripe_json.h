// The JSON bodies the gateway answers with, in the shape of Stripe's API.
// Every function returns compact JSON text; strings that are not valid UTF-8
// have the bad bytes replaced (U+FFFD), so none of them throws.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_STRIPE_JSON_H_
#define RIDE_BOOKING_FAKE_GATEWAY_STRIPE_JSON_H_

#include <string>
#include <string_view>
#include <vector>

#include "fake_gateway/ledger.h"

namespace fake_gateway {

// {"error": {"type": type, "code": code, "param": param, "message": message}}
// with "code" and "param" left out when empty. `type` is one of Stripe's
// api_error, card_error, idempotency_error, invalid_request_error.
std::string ErrorJson(std::string_view type, std::string_view code, std::string_view param, std::string_view message);

// The charge object: {"id", "object": "charge", "amount", "currency",
// "customer", "description", "metadata": {K: V, ...}, "status": "succeeded",
// "created"}.
std::string ChargeJson(const ChargeRecord& charge);

// The body of a charge search (Stripe's Search API): {"object":
// "search_result", "url": "/v1/charges/search", "has_more", "data": [charge
// objects in the order given], "next_page": null}.
std::string ChargeSearchJson(const std::vector<ChargeRecord>& charges, bool has_more);

// A PaymentIntent object for a payment in the ledger: {"id", "object":
// "payment_intent", "amount", "currency", "customer", "description",
// "metadata", "status": "succeeded", "created"}.
std::string IntentJson(const ChargeRecord& payment);

// A payment intent that did not pay, from the request alone: with `status`
// "requires_action" it also carries "next_action" {"type":
// "use_stripe_sdk"}; with "requires_payment_method", "last_payment_error"
// {"type": "card_error", "code": "card_declined", "decline_code":
// "generic_decline", "message"}. As a JSON value, to embed.
std::string UnpaidIntentJson(const std::string& id, const ChargeRecord& request, std::string_view status,
                             std::string_view message);

// The 402 a declined confirmation answers: ErrorJson's card_error with
// "decline_code": "generic_decline" and "payment_intent": the unpaid intent.
std::string DeclinedIntentErrorJson(const std::string& id, const ChargeRecord& request, std::string_view message);

// The body of a payment intent search, as ChargeSearchJson with intents and
// "url": "/v1/payment_intents/search".
std::string IntentSearchJson(const std::vector<ChargeRecord>& payments, bool has_more);

// The body of a list (Stripe's list API, stripe_list.h): {"object": "list",
// "url": "/v1/charges" or "/v1/payment_intents" with `intents`, "has_more",
// "data": [charge or payment intent objects in the order given]}.
std::string PaymentListJson(const std::vector<ChargeRecord>& payments, bool has_more, bool intents);

// The body of GET /_ledger: [{"id", "idempotency_key", "amount", "currency",
// "customer", "created_at"}, ...], oldest first, with "refunded": true added
// to a charge with a refund in `refunds` (absent otherwise, so the shape of
// an unrefunded charge is unchanged).
std::string LedgerJson(const std::vector<ChargeRecord>& charges, const std::vector<RefundRecord>& refunds = {});

// The refund object: {"id", "object": "refund", "amount", "charge" (or
// "payment_intent" for a "pi_..." payment), "status": "succeeded",
// "created"}.
std::string RefundJson(const RefundRecord& refund);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_STRIPE_JSON_H_
