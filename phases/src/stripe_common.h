// What Stripe's API v1 and v2 adapters share: amounts and error answers.
// Private to phases/src.
#ifndef PHASEKEY_PHASES_SRC_STRIPE_COMMON_H_
#define PHASEKEY_PHASES_SRC_STRIPE_COMMON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "phasekey/phases/provider_adapter.h"
#include "phasekey/status.h"

namespace phasekey::phases::internal {

// The amount in Stripe's minor unit (https://docs.stripe.com/currencies):
// ISO minor units, except that MGA is zero-decimal at Stripe (ISO: 2) and ISK
// two-decimal (ISO: 0); three-decimal currencies must end in 0.
Result<std::int64_t> StripeAmount(std::int64_t amount_minor, std::string_view currency);

// Reads a Stripe answer that is not a success object: transport failures,
// Stripe-Should-Retry, card_error (402), idempotency_error (the first request
// with this key had other parameters and may have charged: outcome unknown,
// reconcile), 409 (idempotency_key_in_use, lock_timeout: retry), 429, 5xx
// (retry, unless Stripe-Should-Retry: false says the 500 was saved under the
// key: outcome unknown) and other 4xx (refused).
Classification StripeError(const ProviderAnswer& answer, const nlohmann::json& json);

}  // namespace phasekey::phases::internal

#endif  // PHASEKEY_PHASES_SRC_STRIPE_COMMON_H_
