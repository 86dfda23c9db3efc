// Stripe API v2, Off-Session Payments.
//
// Facts (https://docs.stripe.com/api-v2-overview,
// https://docs.stripe.com/api/v2/payments/off-session-payments/create,
// https://docs.stripe.com/payments/off-session-payments/integrate-with-off-session-payments):
//   - JSON bodies; Idempotency-Key header on POST and DELETE. v2 "retries
//     don't repeat successful operations": Stripe re-drives failed or partly
//     failed work to completion instead of replaying the first answer, within
//     a 30-day window (error-low-level).
//   - amount is {value, currency} with value in minor units.
//   - Authorization runs asynchronously: a created payment is typically
//     "pending" and its outcome arrives as v2 events. kSucceeded therefore
//     means "the payment exists" (status says which state); the flow must
//     follow the events for the final result.
//   - The list endpoint has no filter by metadata: no lookup. With a 30-day
//     window, re-drives stay keyed.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"
#include "stripe_common.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://api.stripe.com";

AdapterInfo StripeV2Info(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "stripe_v2";
  info.display_name = "Stripe (API v2, Off-Session Payments)";
  info.placement = KeyPlacement::kHeader;
  info.key_field = "Idempotency-Key";
  info.key_rules = {1, 255, KeyAlphabet::kPrintableAscii};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24 * 30);
  info.retention_note = "30-day window";
  info.conflict = "409: retry; a retry re-drives failed work instead of replaying";
  info.reference_field = "metadata.phasekey_reference";
  info.reference_rules = {1, 255, KeyAlphabet::kPrintableAscii};
  info.has_lookup = false;
  info.reconciliation = "none (list has no metadata filter); v2 events";
  info.sources = {"https://docs.stripe.com/api-v2-overview",
                  "https://docs.stripe.com/api/v2/payments/off-session-payments/create",
                  "https://docs.stripe.com/payments/off-session-payments/integrate-with-off-session-payments",
                  "https://docs.stripe.com/error-low-level"};
  return info;
}

class StripeV2Adapter final : public ProviderAdapter {
 public:
  explicit StripeV2Adapter(StripeOptions o)
      : ProviderAdapter(StripeV2Info(o.key_retention), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {
    if (options_.stripe_version.empty()) options_.stripe_version = kStripeV2Version;
  }

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::int64_t> amount = StripeAmount(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (intent.customer_or_source.empty() || intent.source_detail.empty()) {
      return Status::InvalidArgument(
          "stripe_v2 needs customer_or_source (customer) and source_detail (payment method)");
    }
    nlohmann::json metadata = {{"phasekey_reference", ReferenceFor(provider_key)}};
    if (!intent.reference.empty()) metadata["order_reference"] = intent.reference;
    if (!intent.description.empty()) metadata["description"] = intent.description;
    const nlohmann::json body = {{"amount", {{"value", *amount}, {"currency", LowerCurrency(intent.currency)}}},
                                 {"cadence", "unscheduled"},
                                 {"customer", intent.customer_or_source},
                                 {"payment_method", intent.source_detail},
                                 {"metadata", metadata}};
    ProviderRequest r = JsonRequest("POST", "/v2/payments/off_session_payments", body);
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    r.headers.emplace_back("Stripe-Version", options_.stripe_version);
    r.headers.emplace_back("Idempotency-Key", FitKey(provider_key));
    return r;
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.transport == ProviderAnswer::Transport::kAnswered && Is2xx(answer.status) &&
        Str(json, "object") == "v2.payments.off_session_payment") {
      const std::string status = Str(json, "status");
      if (status == "failed") return Declined(Str(json, "failure_reason"), "off-session payment failed");
      if (status == "canceled") return Refused("canceled", "off-session payment canceled");
      return Succeeded(Str(json, "id"), status);
    }
    return StripeError(answer, json);
  }

 private:
  StripeOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewStripeV2Adapter(StripeOptions options) {
  return std::make_unique<internal::StripeV2Adapter>(std::move(options));
}

}  // namespace phasekey::phases
