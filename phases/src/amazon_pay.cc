// Amazon Pay API v2, Create Charge from a Charge Permission.
//
// Facts (https://developer.amazon.com/docs/amazon-pay-api-v2/idempotency.html,
// https://developer.amazon.com/docs/amazon-pay-api-v2/charge.html,
// https://developer.amazon.com/docs/amazon-pay-api-v2/error-handling.html):
//   - x-amz-pay-idempotency-key header on POST, at most 32 characters of
//     [A-Za-z0-9_-]; keys are per merchant account and "stored
//     indefinitely". The same key with changed values answers
//     DuplicateIdempotencyKey (400): the first request may have charged, so
//     the outcome is unknown.
//   - chargeAmount {amount: "14.00", currencyCode}: a decimal string.
//   - Charge states: Authorized, CaptureInitiated, Captured: paid;
//     AuthorizationInitiated (with canHandlePendingAuthorization): pending but
//     existing; Declined: a decline (reasonCode); Canceled: refused.
//   - 429 TooManyRequests, 500 InternalServerError, 503 ServiceUnavailable:
//     retry with the same key.
//   - Requests are signed (RSA-PSS over the canonical request, with
//     x-amz-pay-date, x-amz-pay-host, x-amz-pay-region): the signer of
//     NewAmazonPaySigner(AmazonPayOptions::signing)
//     (phasekey/phases/amazon_pay_signing.h), or AmazonPayOptions::sign. It
//     runs last, so the idempotency key is among the signed headers.
//   - Keys never expire, so no lookup is needed (and there is no query by
//     merchantReferenceId).
#include <stdexcept>
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://pay-api.amazon.com";

AdapterInfo AmazonPayInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "amazon_pay";
  info.display_name = "Amazon Pay (API v2)";
  info.placement = KeyPlacement::kHeader;
  info.key_field = "x-amz-pay-idempotency-key";
  info.key_rules = {1, 32, KeyAlphabet::kUrlSafe};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::seconds::max();
  info.retention_note = "stored indefinitely per merchant account";
  info.conflict = "changed values under a key: DuplicateIdempotencyKey (400)";
  info.reference_field = "merchantMetadata.merchantReferenceId";
  info.reference_rules = {1, 256, KeyAlphabet::kPrintableAscii};
  info.has_lookup = false;
  info.reconciliation = "none needed (keys never expire)";
  info.sources = {"https://developer.amazon.com/docs/amazon-pay-api-v2/idempotency.html",
                  "https://developer.amazon.com/docs/amazon-pay-api-v2/charge.html",
                  "https://developer.amazon.com/docs/amazon-pay-api-v2/error-handling.html"};
  return info;
}

Result<nlohmann::json> Price(std::int64_t minor, const std::string& currency) {
  Result<std::string> amount = FormatMajor(minor, currency);
  if (!amount) return amount.error();
  return nlohmann::json{{"amount", *amount}, {"currencyCode", UpperCurrency(currency)}};
}

Classification Error(const ProviderAnswer& answer, const nlohmann::json& json) {
  const std::string reason = Str(json, "reasonCode");
  const std::string message = Str(json, "message");
  if (reason == "DuplicateIdempotencyKey") return Unknown(reason, "the key was used with other values: " + message);
  if (reason == "HardDeclined" || reason == "SoftDeclined" || reason == "TransactionAmountExceeded" ||
      reason == "PaymentMethodNotAllowed" || reason == "AmazonRejected" || reason == "ProcessingFailure") {
    return Declined(reason, message);
  }
  return HttpFallback(answer, /*keyed=*/true, reason, message);
}

// The options with `sign` set from `signing`, when that is how the signer
// was given. Throws std::invalid_argument (NewAmazonPayAdapter's contract).
AmazonPayOptions WithSigner(AmazonPayOptions o) {
  if (!o.signing) return o;
  if (o.sign) throw std::invalid_argument("amazon_pay: set AmazonPayOptions::signing or ::sign, not both");
  auto signer = NewAmazonPaySigner(*o.signing);
  if (!signer) throw std::invalid_argument(signer.error().ToString());
  o.sign = std::move(*signer);
  o.signing.reset();  // the signer holds the key; no second copy of it
  return o;
}

class AmazonPayAdapter final : public ProviderAdapter {
 public:
  explicit AmazonPayAdapter(AmazonPayOptions o)
      : ProviderAdapter(AmazonPayInfo(o.key_retention), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(WithSigner(std::move(o))) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<nlohmann::json> price = Price(intent.amount_minor, intent.currency);
    if (!price) return price.error();
    if (intent.customer_or_source.empty()) {
      return Status::InvalidArgument("amazon_pay needs customer_or_source (chargePermissionId)");
    }
    nlohmann::json metadata = {{"merchantReferenceId", ReferenceFor(provider_key)}};
    if (!intent.description.empty()) metadata["customInformation"] = intent.description.substr(0, 4096);
    const nlohmann::json body = {{"chargePermissionId", intent.customer_or_source},
                                 {"chargeAmount", *price},
                                 {"captureNow", true},
                                 {"canHandlePendingAuthorization", false},
                                 {"merchantMetadata", metadata}};
    return Signed(JsonRequest("POST", "/v2/charges", body), provider_key);
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && !Str(json, "chargeId").empty()) {
      const nlohmann::json& details = At(json, {"statusDetails"});
      const std::string state = Str(details, "state");
      if (state == "Declined") return Declined(Str(details, "reasonCode"), Str(details, "reasonDescription"));
      if (state == "Canceled") return Refused(state, Str(details, "reasonDescription"));
      return Succeeded(Str(json, "chargeId"), state);
    }
    return Error(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<nlohmann::json> price = Price(refund.amount_minor, refund.currency);
    if (!price) return price.error();
    const nlohmann::json body = {{"chargeId", refund.payment_id}, {"refundAmount", *price}};
    return Signed(JsonRequest("POST", "/v2/refunds", body), provider_key);
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && !Str(json, "refundId").empty()) {
      const std::string state = Str(At(json, {"statusDetails"}), "state");
      if (state == "Declined") return Refused(state, "refund declined");
      return Succeeded(Str(json, "refundId"), state);
    }
    return Error(answer, json);
  }

 private:
  Result<ProviderRequest> Signed(ProviderRequest r, std::string_view provider_key) const {
    r.headers.emplace_back("x-amz-pay-idempotency-key", FitKey(provider_key));
    if (options_.sign) {
      Status signed_ok = options_.sign(&r);
      if (!signed_ok.ok()) return signed_ok;
    }
    return r;
  }

  AmazonPayOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewAmazonPayAdapter(AmazonPayOptions options) {
  return std::make_unique<internal::AmazonPayAdapter>(std::move(options));
}

}  // namespace phasekey::phases
