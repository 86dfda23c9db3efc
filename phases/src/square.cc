// Square Payments API.
//
// Facts (https://developer.squareup.com/reference/square/payments-api/create-payment,
// https://developer.squareup.com/docs/build-basics/common-api-patterns/idempotency,
// https://developer.squareup.com/reference/square/enums/ErrorCode,
// https://developer.squareup.com/reference/square/enums/ErrorCategory,
// https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-endpoint/28303):
//   - idempotency_key is a body field, 1..45 for CreatePayment; multi-byte
//     characters count more, so keys stay ASCII.
//   - Retention is "not published" (Square staff on the forum): we assume
//     the engine's 24 h, configurable through AdapterOptions::key_retention.
//   - amount_money {amount, currency}, amount in the smallest unit.
//   - Errors: {"errors": [{category, code, detail}]}. PAYMENT_METHOD_ERROR
//     (e.g. CARD_DECLINED, GENERIC_DECLINE): a decline. TEMPORARY_ERROR ("You
//     can safely retry ... using the same idempotency key"),
//     INTERNAL_SERVER_ERROR, SERVICE_UNAVAILABLE, GATEWAY_TIMEOUT,
//     RATE_LIMITED: retry. IDEMPOTENCY_KEY_REUSED: the key was used with
//     another request, which may have charged: outcome unknown.
//   - ListPayments cannot filter by reference_id and is eventually
//     consistent: no lookup.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://connect.squareup.com";

AdapterInfo SquareInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "square";
  info.display_name = "Square (Payments API)";
  info.placement = KeyPlacement::kBodyField;
  info.key_field = "idempotency_key";
  info.key_rules = {1, 45, KeyAlphabet::kPrintableAscii};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24);
  info.retention_documented = false;
  info.retention_note = "not published; 24 h assumed, configurable";
  info.conflict = "IDEMPOTENCY_KEY_REUSED on other params; TEMPORARY_ERROR: retry";
  info.reference_field = "reference_id";
  info.reference_rules = {1, 40, KeyAlphabet::kPrintableAscii};
  info.has_lookup = false;
  info.reconciliation = "none (ListPayments cannot filter by reference_id)";
  info.sources = {
      "https://developer.squareup.com/reference/square/payments-api/create-payment",
      "https://developer.squareup.com/docs/build-basics/common-api-patterns/idempotency",
      "https://developer.squareup.com/reference/square/enums/ErrorCode",
      "https://developer.squareup.com/reference/square/enums/ErrorCategory",
      "https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-"
      "endpoint/28303"};
  return info;
}

Classification PaymentObject(const nlohmann::json& payment) {
  const std::string status = Str(payment, "status");
  if (status == "COMPLETED" || status == "APPROVED" || status == "PENDING")
    return Succeeded(Str(payment, "id"), status);
  if (status == "FAILED") return Declined(status, "payment failed");
  if (status == "CANCELED") return Refused(status, "payment canceled");
  return Unknown("unexpected_status", "payment status '" + status + "'");
}

Classification Errors(const ProviderAnswer& answer, const nlohmann::json& json) {
  const nlohmann::json& errors = At(json, {"errors"});
  const nlohmann::json first = errors.is_array() && !errors.empty() ? errors[0] : nlohmann::json::object();
  const std::string category = Str(first, "category");
  const std::string code = Str(first, "code");
  const std::string detail = Str(first, "detail");
  if (category == "PAYMENT_METHOD_ERROR") return Declined(code, detail);
  if (code == "IDEMPOTENCY_KEY_REUSED") return Unknown(code, "key used with another request: " + detail);
  if (code == "TEMPORARY_ERROR" || code == "INTERNAL_SERVER_ERROR" || code == "SERVICE_UNAVAILABLE" ||
      code == "GATEWAY_TIMEOUT" || code == "RATE_LIMITED" || category == "RATE_LIMIT_ERROR") {
    return RetryLater(code, detail);
  }
  return HttpFallback(answer, /*keyed=*/true, code, detail);
}

class SquareAdapter final : public ProviderAdapter {
 public:
  explicit SquareAdapter(SquareOptions o)
      : ProviderAdapter(SquareInfo(o.key_retention), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {
    if (options_.square_version.empty()) options_.square_version = kSquareVersion;
  }

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<nlohmann::json> money = Money(intent.amount_minor, intent.currency);
    if (!money) return money.error();
    if (intent.customer_or_source.empty())
      return Status::InvalidArgument("square needs customer_or_source (source_id)");
    nlohmann::json body = {{"idempotency_key", FitKey(provider_key)},
                           {"source_id", intent.customer_or_source},
                           {"amount_money", *money},
                           {"autocomplete", true},
                           {"reference_id", ReferenceFor(provider_key)}};
    if (!intent.source_detail.empty()) body["customer_id"] = intent.source_detail;
    if (!options_.location_id.empty()) body["location_id"] = options_.location_id;
    if (!intent.description.empty()) body["note"] = intent.description.substr(0, 500);
    return Authorized(JsonRequest("POST", "/v2/payments", body));
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && At(json, {"payment"}).is_object()) return PaymentObject(At(json, {"payment"}));
    return Errors(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<nlohmann::json> money = Money(refund.amount_minor, refund.currency);
    if (!money) return money.error();
    nlohmann::json body = {
        {"idempotency_key", FitKey(provider_key)}, {"payment_id", refund.payment_id}, {"amount_money", *money}};
    if (!refund.reason.empty()) body["reason"] = refund.reason.substr(0, 192);
    return Authorized(JsonRequest("POST", "/v2/refunds", body));
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    const nlohmann::json& refund = At(json, {"refund"});
    if (Is2xx(answer.status) && refund.is_object()) {
      const std::string status = Str(refund, "status");
      if (status == "REJECTED" || status == "FAILED") return Refused(status, "refund " + status);
      return Succeeded(Str(refund, "id"), status);
    }
    return Errors(answer, json);
  }

 private:
  static Result<nlohmann::json> Money(std::int64_t minor, const std::string& currency) {
    Result<std::int64_t> amount = RescaleMinor(minor, currency, CurrencyExponent(currency));
    if (!amount) return amount.error();
    return nlohmann::json{{"amount", *amount}, {"currency", UpperCurrency(currency)}};
  }

  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    r.headers.emplace_back("Square-Version", options_.square_version);
    return r;
  }

  SquareOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewSquareAdapter(SquareOptions options) {
  return std::make_unique<internal::SquareAdapter>(std::move(options));
}

}  // namespace phasekey::phases
