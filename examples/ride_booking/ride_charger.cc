#include "ride_charger.h"

#include <stdexcept>

#include "phasekey/phases/adapters.h"
#include "phasekey/phases/charge_phase.h"

namespace ride_booking {
namespace {

namespace phases = phasekey::phases;

using phasekey::PhaseContext;

// What the fake gateway needs besides the base URL; a real deployment would
// take these from its configuration.
constexpr char kAdyenMerchant[] = "PhasekeyRides";
constexpr char kReturnUrl[] = "https://rides.example/payments/return";
constexpr char kHyperPayEntity[] = "8a8294174b7ecb28014b9699220015ca";

long long UserId(const PhaseContext& ctx) {
  const std::string& account = ctx.account();
  if (account.rfind("user_", 0) != 0) throw std::invalid_argument("not a ride_booking account: " + account);
  return std::stoll(account.substr(5));
}

// An adapter's options with what every provider takes: where it is and the
// credential.
template <typename Options>
Options Access(const std::string& base_url, const std::string& secret,
               std::optional<std::chrono::milliseconds> lookup_window) {
  Options o;
  o.base_url = base_url;
  o.secret = secret;
  o.lookup_window = lookup_window;
  return o;
}

std::unique_ptr<phases::ProviderAdapter> NewAdapter(const std::string& provider, const std::string& base_url,
                                                    const std::string& secret, phases::StripeV1Api stripe_api,
                                                    std::optional<std::chrono::milliseconds> window) {
  if (provider == "stripe") {
    auto o = Access<phases::StripeOptions>(base_url, secret, window);
    o.api = stripe_api;
    return phases::NewStripeV1Adapter(o);
  }
  if (provider == "adyen") {
    auto o = Access<phases::AdyenOptions>(base_url, secret, window);
    o.merchant_account = kAdyenMerchant;
    return phases::NewAdyenAdapter(o);
  }
  if (provider == "square") return phases::NewSquareAdapter(Access<phases::SquareOptions>(base_url, secret, window));
  if (provider == "tap") {
    auto o = Access<phases::TapOptions>(base_url, secret, window);
    o.redirect_url = kReturnUrl;
    return phases::NewTapAdapter(o);
  }
  if (provider == "moyasar") {
    auto o = Access<phases::MoyasarOptions>(base_url, secret, window);
    o.callback_url = kReturnUrl;
    return phases::NewMoyasarAdapter(o);
  }
  if (provider == "hyperpay") {
    auto o = Access<phases::HyperPayOptions>(base_url, secret, window);
    o.entity_id = kHyperPayEntity;
    return phases::NewHyperPayAdapter(o);
  }
  return nullptr;
}

// The user's saved payment source, as `provider` names it (see the header).
void SetSource(const std::string& provider, long long user, phases::PaymentIntent* intent) {
  const std::string id = std::to_string(user);
  if (provider == "stripe") {
    intent->customer_or_source = id;
    intent->source_detail = "pm_" + id;  // PaymentIntents only; Charges take the customer's default source
  } else if (provider == "adyen") {
    intent->customer_or_source = id;
    intent->source_detail = "pm_" + id;
  } else if (provider == "square") {
    intent->customer_or_source = "ccof_" + id;
    intent->source_detail = id;
  } else if (provider == "tap") {
    intent->customer_or_source = "card_" + id;
    intent->source_detail = "cus_" + id;
  } else if (provider == "moyasar") {
    intent->customer_or_source = "token_" + id;
  } else {
    intent->customer_or_source = "reg_" + id;
  }
}

}  // namespace

std::vector<std::string> ProviderNames() { return {"stripe", "adyen", "square", "tap", "moyasar", "hyperpay"}; }

std::optional<phases::StripeV1Api> StripeApiNamed(const std::string& name) {
  if (name == "payment_intents") return phases::StripeV1Api::kPaymentIntents;
  if (name == "charges") return phases::StripeV1Api::kCharges;
  return std::nullopt;
}

RideCharger::RideCharger(const std::string& provider, const std::string& gateway_url, std::chrono::milliseconds timeout,
                         const std::string& secret, phases::StripeV1Api stripe_api,
                         std::optional<std::chrono::milliseconds> lookup_window, phases::BeastHttpClientOptions http)
    : provider_(provider), timeout_(timeout) {
  if (!phases::ParseBaseUrl(gateway_url)) throw std::invalid_argument("bad gateway URL: " + gateway_url);
  adapter_ = NewAdapter(provider, gateway_url, secret, stripe_api, lookup_window);
  if (!adapter_) throw std::invalid_argument("unknown provider: " + provider);
  http_ = phases::NewBeastHttpClient(std::move(http));
}

RideCharger::~RideCharger() = default;

std::string RideCharger::LedgerKeyFor(const std::string& provider_key) const {
  if (adapter_->info().placement == phases::KeyPlacement::kNone) return adapter_->ReferenceFor(provider_key);
  return adapter_->FitKey(provider_key);
}

void RideCharger::AddChargePhase(phasekey::Flow::Builder& builder, phasekey::RecoveryPoint from,
                                 const std::string& phase, phasekey::RecoveryPoint next, long long amount,
                                 const std::string& currency) const {
  auto intent = [provider = provider_, amount, currency](const PhaseContext& ctx) {
    phases::PaymentIntent i;
    i.amount_minor = amount;
    i.currency = currency;
    SetSource(provider, UserId(ctx), &i);
    // The description names the key row, not the ride: identical on every
    // retry of this charge, as the provider's key check demands.
    i.description = "Ride booked with key " + ctx.idempotency_key();
    i.reference = ctx.idempotency_key();
    return i;
  };
  phases::ChargeOptions options;
  // Lookup and charge together stay within the budget the service declares
  // (its lease must outlast the phase).
  options.call_timeout = adapter_->info().has_lookup ? timeout_ / 2 : timeout_;
  phases::AddCharge(builder, from, phase, *adapter_, *http_, intent, next, options);
}

void RideCharger::AddRefundPhase(phasekey::Flow::Builder& builder, phasekey::RecoveryPoint from,
                                 const std::string& phase, phasekey::RecoveryPoint next,
                                 phases::RefundIntentFn refund) const {
  phases::RefundOptions options;
  options.call_timeout = timeout_;
  phases::AddRefund(builder, from, phase, *adapter_, *http_, std::move(refund), next, options);
}

}  // namespace ride_booking
