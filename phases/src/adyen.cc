// Adyen Checkout API, merchant-initiated card-on-file payment.
//
// Facts (https://docs.adyen.com/development-resources/api-idempotency,
// https://docs.adyen.com/api-explorer/Checkout/71/post/payments,
// https://docs.adyen.com/online-payments/payment-result-codes):
//   - Idempotency-Key header on POST (names are case-insensitive), at most 64
//     characters; keys are scoped to the company account and not checked
//     across regional endpoints.
//   - Retention: the current page says keys are "valid for a minimum period
//     of 7 days"; an older page said 31 days. Safer reading: 7 days.
//   - A duplicate while the first is unfinished: HTTP 422 or 409 with
//     errorCode 704 ("request already processed or in progress"). With the
//     response header transient-error: true, retry later with the same key;
//     without it, do not retry: the first request was processed and its
//     answer is not available here, so the outcome is unknown. The idempotency
//     store being down: 503 with errorCode 703 (retry).
//   - resultCode Authorised: paid; Received/Pending: the payment exists and
//     settles later; Refused: a decline (refusalReason); Error/Cancelled:
//     failed; RedirectShopper/IdentifyShopper/ChallengeShopper/
//     PresentToShopper: the shopper must act, which an off-session charge
//     cannot do (refused).
//   - The Checkout API has no status query by merchant reference (webhooks
//     only): no lookup.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://checkout-test.adyen.com";
constexpr char kVersion[] = "/v71";

AdapterInfo AdyenInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "adyen";
  info.display_name = "Adyen (Checkout API v71)";
  info.placement = KeyPlacement::kHeader;
  info.key_field = "Idempotency-Key";
  info.key_rules = {1, 64, KeyAlphabet::kPrintableAscii};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24 * 7);
  info.retention_note = "minimum 7 days (older page: 31 days); 7 days assumed";
  info.conflict = "422/409 errorCode 704: retry only with transient-error: true";
  info.reference_field = "reference";
  info.reference_rules = {1, 80, KeyAlphabet::kPrintableAscii};
  info.has_lookup = false;
  info.reconciliation = "none (no query by reference; webhooks)";
  info.sources = {"https://docs.adyen.com/development-resources/api-idempotency",
                  "https://docs.adyen.com/api-explorer/Checkout/71/post/payments",
                  "https://docs.adyen.com/online-payments/payment-result-codes",
                  "https://docs.adyen.com/development-resources/response-handling"};
  return info;
}

Classification ResultCode(const nlohmann::json& json) {
  const std::string result = Str(json, "resultCode");
  const std::string psp = Str(json, "pspReference");
  if (result == "Authorised" || result == "Received" || result == "Pending") return Succeeded(psp, result);
  if (result == "Refused") {
    const std::string code = Str(json, "refusalReasonCode");
    return Declined(code.empty() ? result : code, Str(json, "refusalReason"));
  }
  if (result == "Error" || result == "Cancelled") return Refused(result, Str(json, "refusalReason"));
  if (!result.empty()) return Refused(result, "the shopper must act; not possible off-session");
  return Unknown("unexpected_answer", "no resultCode");
}

class AdyenAdapter final : public ProviderAdapter {
 public:
  explicit AdyenAdapter(AdyenOptions o)
      : ProviderAdapter(AdyenInfo(o.key_retention), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<nlohmann::json> amount = Amount(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (intent.customer_or_source.empty() || intent.source_detail.empty()) {
      return Status::InvalidArgument(
          "adyen needs customer_or_source (shopperReference) and source_detail "
          "(storedPaymentMethodId)");
    }
    nlohmann::json body = {{"merchantAccount", options_.merchant_account},
                           {"amount", *amount},
                           {"reference", ReferenceFor(provider_key)},
                           {"paymentMethod", {{"type", "scheme"}, {"storedPaymentMethodId", intent.source_detail}}},
                           {"shopperReference", intent.customer_or_source},
                           {"shopperInteraction", "ContAuth"},
                           {"recurringProcessingModel", "UnscheduledCardOnFile"}};
    if (!intent.description.empty()) body["shopperStatement"] = intent.description.substr(0, 135);
    if (!intent.reference.empty()) body["metadata"] = {{"order_reference", intent.reference}};
    return Keyed(JsonRequest("POST", std::string(kVersion) + "/payments", body), provider_key);
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.status == 200) return ResultCode(json);
    return Error(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<nlohmann::json> amount = Amount(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    const nlohmann::json body = {
        {"merchantAccount", options_.merchant_account}, {"amount", *amount}, {"reference", ReferenceFor(provider_key)}};
    const std::string path = std::string(kVersion) + "/payments/" + PercentEncode(refund.payment_id) + "/refunds";
    return Keyed(JsonRequest("POST", path, body), provider_key);
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.status == 201) return Succeeded(Str(json, "pspReference"), Str(json, "status"));
    return Error(answer, json);
  }

 private:
  Result<nlohmann::json> Amount(std::int64_t minor, const std::string& currency) const {
    if (options_.merchant_account.empty()) return Status::InvalidArgument("adyen needs merchant_account");
    Result<std::int64_t> value = RescaleMinor(minor, currency, CurrencyExponent(currency));
    if (!value) return value.error();
    return nlohmann::json{{"value", *value}, {"currency", UpperCurrency(currency)}};
  }

  ProviderRequest Keyed(ProviderRequest r, std::string_view provider_key) const {
    if (!options_.secret.empty()) r.headers.emplace_back("X-API-Key", options_.secret);
    r.headers.emplace_back("Idempotency-Key", FitKey(provider_key));
    return r;
  }

  static Classification Error(const ProviderAnswer& answer, const nlohmann::json& json) {
    const std::string code = Str(json, "errorCode");
    const std::string message = Str(json, "message");
    if (code == "704") {
      const std::string* transient = answer.FindHeader("transient-error");
      if (transient != nullptr && *transient == "true") return RetryLater(code, message);
      return Unknown(code, "already processed under this key, answer unavailable: " + message);
    }
    if (code == "703") return RetryLater(code, message);
    return HttpFallback(answer, /*keyed=*/true, code, message);
  }

  AdyenOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewAdyenAdapter(AdyenOptions options) {
  return std::make_unique<internal::AdyenAdapter>(std::move(options));
}

}  // namespace phasekey::phases
