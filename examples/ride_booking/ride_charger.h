// RideCharger: how the ride flow charges its 2000 usd, and the refund flow
// refunds it, per payment provider.
//
//   stripe, adyen, square, tap, moyasar, hyperpay
//             the phasekey_phases adapter for that provider (stripe: the
//             stripe_v1 adapter; PaymentIntents created and confirmed in
//             one call unless the Charges API is chosen), through
//             phasekey::phases::AddCharge (reconcile-before-charge), with the
//             adapter's base URL set to the gateway URL
//
// Each provider gets the user's saved payment source in its own terms (the
// fake gateway declines user 13's card in every dialect):
//   stripe    customer "<id>" (PaymentIntents: with payment_method
//             "pm_<id>"; the gateway asks user 14 to authenticate, which a
//             server-side flow cannot, so that payment is declined)
//   adyen     shopperReference "<id>", storedPaymentMethodId "pm_<id>"
//   square    source_id "ccof_<id>", customer_id "<id>"
//   tap       source "card_<id>", customer "cus_<id>"
//   moyasar   token "token_<id>"
//   hyperpay  registration "reg_<id>"
//
// Immutable after construction and thread-safe; must outlive the flows built
// with it.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_CHARGER_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_CHARGER_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "phasekey/flow.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/http_client.h"
#include "phasekey/phases/provider_adapter.h"
#include "phasekey/phases/refund_phase.h"

namespace ride_booking {

// "stripe", "adyen", "square", "tap", "moyasar", "hyperpay".
std::vector<std::string> ProviderNames();

// The names of the Stripe APIs for --stripe-api: "payment_intents" (the
// default, Stripe's recommendation) and "charges" (older accounts); nullopt
// for another name.
std::optional<phasekey::phases::StripeV1Api> StripeApiNamed(const std::string& name);

class RideCharger {
 public:
  // Throws std::invalid_argument for an unknown provider or a gateway URL
  // that is not "http(s)://host:port". `secret` is the provider's API
  // credential (empty: none sent), placed as that provider wants it.
  // `stripe_api`: which Stripe API v1 charges through (stripe only).
  // `lookup_window`: overrides the adapter's lookup consistency window
  // (AdapterOptions::lookup_window); nullopt keeps the adapter's own.
  // `http`: the gateway client's trust and connection pool (one client, so
  // one pool, for every charge and refund).
  RideCharger(const std::string& provider, const std::string& gateway_url, std::chrono::milliseconds timeout,
              const std::string& secret = "",
              phasekey::phases::StripeV1Api stripe_api = phasekey::phases::StripeV1Api::kPaymentIntents,
              std::optional<std::chrono::milliseconds> lookup_window = std::nullopt,
              phasekey::phases::BeastHttpClientOptions http = {});
  ~RideCharger();
  RideCharger(const RideCharger&) = delete;
  RideCharger& operator=(const RideCharger&) = delete;

  const std::string& provider() const { return provider_; }

  // What the gateway's ledger shows as the "idempotency_key" of the charge
  // made for the engine's `provider_key`: the key as the provider reads it
  // (fitted to its limits), or the merchant reference for providers without
  // keys (HyperPay).
  std::string LedgerKeyFor(const std::string& provider_key) const;

  // Adds the foreign phase `phase` from `from` to `next` that charges
  // `amount` minor units of `currency` to the account's user's saved source.
  // The phase's whole budget is the constructor's `timeout`: where the
  // adapter may look up before charging, the lookup gets at most half of it
  // and the charge the rest. The move to `next` records a
  // phasekey::phases::ChargeOutcome (phasekey/phases/payment_outcome.h).
  void AddChargePhase(phasekey::Flow::Builder& builder, phasekey::RecoveryPoint from, const std::string& phase,
                      phasekey::RecoveryPoint next, long long amount, const std::string& currency) const;

  // Adds the foreign phase `phase` from `from` to `next` that refunds what
  // `refund` computes through the same provider (phasekey::phases::AddRefund),
  // within the constructor's `timeout`. The move to `next` records a
  // phasekey::phases::RefundOutcome.
  void AddRefundPhase(phasekey::Flow::Builder& builder, phasekey::RecoveryPoint from, const std::string& phase,
                      phasekey::RecoveryPoint next, phasekey::phases::RefundIntentFn refund) const;

 private:
  std::string provider_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<phasekey::phases::ProviderAdapter> adapter_;
  std::unique_ptr<phasekey::phases::HttpClient> http_;
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_CHARGER_H_
