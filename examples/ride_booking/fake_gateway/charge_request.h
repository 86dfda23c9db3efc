// The parameters of POST /v1/charges and POST /v1/payment_intents, and their
// validation.
//
// Accepted form fields (anything else is rejected, as Stripe does):
//   amount       required; a positive integer in minor units (cents), at most
//                99999999 (Stripe's eight digits); no sign, no leading '+'.
//   currency     required; exactly three lowercase ASCII letters ("usd").
//   customer     required; "cus_<id>" or a bare "<id>" (the ride service
//                sends its user id, e.g. "13"); <id> is 1..64 characters of
//                [A-Za-z0-9_]. Echoed back exactly as sent. Customer 13 (sent
//                as "13" or "cus_13") is the one whose card is declined.
//   description  optional; valid UTF-8 of at most 1000 bytes.
//   metadata[K]  optional, repeatable with distinct K: a key of 1..40
//                characters and a value of at most 500 bytes of valid UTF-8
//                (Stripe's limits); the phases/ Stripe adapter sends
//                metadata[phasekey_reference] and metadata[order_reference].
// POST /v1/payment_intents takes the same fields, and also:
//   confirm      required, "true": the fake creates and confirms in one call
//                (Stripe's server-side flow); a PaymentIntent left to confirm
//                later is not supported (400 parameter_invalid_boolean).
//   payment_method  optional; 1..64 characters of [A-Za-z0-9_] ("pm_7").
//   automatic_payment_methods[enabled], automatic_payment_methods[allow_redirects]
//                optional; "true"/"false" and "always"/"never". Accepted and
//                compared on a key's reuse, otherwise ignored.
// Customer 14 (PaymentIntents only) needs authentication: its payment intent
// answers requires_action.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_CHARGE_REQUEST_H_
#define RIDE_BOOKING_FAKE_GATEWAY_CHARGE_REQUEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace fake_gateway {

struct ChargeParams {
  int64_t amount = 0;
  std::string currency;
  std::string customer;
  std::optional<std::string> description;
  std::map<std::string, std::string> metadata;  // metadata[K] fields by K
  // PaymentIntents only: the other fields, by name (payment_method,
  // automatic_payment_methods[...]); confirm is checked, not kept.
  std::map<std::string, std::string> intent_fields = {};
};

// Why a request was rejected before execution: the members of a Stripe
// invalid_request_error. Such requests are never stored under their key.
struct ParamError {
  std::string code;  // "parameter_missing", "parameter_invalid_integer", ...
  std::string param;
  std::string message;
};

// Decodes and validates a form-encoded body: the ChargeParams, or the first
// problem found (fields are checked in the order listed above).
std::variant<ChargeParams, ParamError> ParseChargeParams(std::string_view form_body);
// The same for POST /v1/payment_intents.
std::variant<ChargeParams, ParamError> ParseIntentParams(std::string_view form_body);

// A canonical text of `params`, equal for two requests exactly when their
// parameters are equal; the idempotency layer compares these.
std::string CanonicalParams(const ChargeParams& params);

// True for the customer whose card is always declined (13, see above).
bool IsDeclinedCustomer(std::string_view customer);
// True for the customer whose payments need authentication (14, see above).
bool NeedsAuthentication(std::string_view customer);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_CHARGE_REQUEST_H_
