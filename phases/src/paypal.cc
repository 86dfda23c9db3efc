// PayPal Orders v2, single-step create and capture with a vaulted source.
//
// Facts (https://developer.paypal.com/reference/guidelines/idempotency,
// https://developer.paypal.com/docs/api/orders/v2/,
// https://developer.paypal.com/api/rest/reference/currency-codes/,
// https://developer.paypal.com/api/rest/troubleshooting/rest_unprocessable_entity/):
//   - PayPal-Request-Id header, 1..108 characters; "The server stores keys
//     for 6 hours. The API callers can request the times to up to 72 hours
//     by speaking to their Account Manager." It is mandatory for single-step
//     create-order calls with a payment source. (Payments v2 refunds keep
//     keys 45 days.)
//   - A reused id returns "the latest status of the previous request"; two
//     simultaneous requests: "processes the first request and might fail the
//     second" (409: retry).
//   - amount.value is a decimal string; HUF, JPY and TWD take no decimals
//     ("Decimal amounts cause an error"), so those amounts must be whole.
//   - Declines arrive as 422 UNPROCESSABLE_ENTITY with an issue such as
//     INSTRUMENT_DECLINED, TRANSACTION_REFUSED or CARD_EXPIRED, or as a
//     capture with status DECLINED. DUPLICATE_INVOICE_ID means a payment with
//     our reference (invoice_id) exists already: outcome unknown.
//   - No query by invoice_id in the Orders API (Transaction Search lags by
//     hours): no lookup. The 6 h retention is short: keep the re-drive
//     horizon below it (the charge phase declares it).
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://api-m.paypal.com";

AdapterInfo PayPalInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "paypal";
  info.display_name = "PayPal (Orders v2)";
  info.placement = KeyPlacement::kHeader;
  info.key_field = "PayPal-Request-Id";
  info.key_rules = {1, 108, KeyAlphabet::kPrintableAscii};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(6);
  info.retention_note = "6 h (up to 72 h via account manager)";
  info.conflict = "reuse returns the latest status; simultaneous: second may fail";
  info.reference_field = "purchase_units[0].invoice_id";
  info.reference_rules = {1, 127, KeyAlphabet::kPrintableAscii};
  info.has_lookup = false;
  info.reconciliation = "none (Transaction Search lags hours)";
  info.sources = {"https://developer.paypal.com/reference/guidelines/idempotency",
                  "https://developer.paypal.com/docs/api/orders/v2/",
                  "https://developer.paypal.com/api/rest/reference/currency-codes/",
                  "https://developer.paypal.com/api/rest/troubleshooting/rest_unprocessable_entity/"};
  return info;
}

int PayPalDecimals(const std::string& currency) {
  const std::string code = UpperCurrency(currency);
  if (code == "HUF" || code == "JPY" || code == "TWD") return 0;
  return CurrencyExponent(code);
}

Result<nlohmann::json> Amount(std::int64_t minor, const std::string& currency) {
  Result<std::string> value = FormatDecimal(minor, currency, PayPalDecimals(currency));
  if (!value) return value.error();
  return nlohmann::json{{"currency_code", UpperCurrency(currency)}, {"value", *value}};
}

Classification OrderObject(const nlohmann::json& order) {
  const std::string order_status = Str(order, "status");
  if (order_status == "PAYER_ACTION_REQUIRED")
    return Refused(order_status, "the payer must act; not possible off-session");
  const nlohmann::json& units = At(order, {"purchase_units"});
  const nlohmann::json& captures = units.is_array() && !units.empty() ? At(units[0], {"payments", "captures"}) : units;
  if (!captures.is_array() || captures.empty())
    return Unknown("no_capture", "order " + order_status + " without capture");
  const nlohmann::json& capture = captures[0];
  const std::string status = Str(capture, "status");
  if (status == "COMPLETED" || status == "PENDING") return Succeeded(Str(capture, "id"), status);
  if (status == "DECLINED" || status == "FAILED") {
    return Declined(status, Str(At(capture, {"status_details"}), "reason"));
  }
  return Unknown("unexpected_status", "capture status '" + status + "'");
}

Classification Error(const ProviderAnswer& answer, const nlohmann::json& json) {
  const nlohmann::json& details = At(json, {"details"});
  const nlohmann::json first = details.is_array() && !details.empty() ? details[0] : nlohmann::json::object();
  const std::string issue = Str(first, "issue");
  const std::string message = Str(first, "description").empty() ? Str(json, "message") : Str(first, "description");
  if (issue == "DUPLICATE_INVOICE_ID") return Unknown(issue, "a payment with this invoice_id exists: " + message);
  if (answer.status == 422 &&
      (issue == "INSTRUMENT_DECLINED" || issue == "TRANSACTION_REFUSED" || issue == "CARD_EXPIRED" ||
       issue == "PAYER_CANNOT_PAY" || issue == "TRANSACTION_BLOCKED_BY_PAYEE")) {
    return Declined(issue, message);
  }
  if (answer.status == 409) return RetryLater(issue.empty() ? Str(json, "name") : issue, message);
  return HttpFallback(answer, /*keyed=*/true, issue.empty() ? Str(json, "name") : issue, message);
}

class PayPalAdapter final : public ProviderAdapter {
 public:
  explicit PayPalAdapter(PayPalOptions o)
      : ProviderAdapter(PayPalInfo(o.key_retention), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<nlohmann::json> amount = Amount(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (intent.customer_or_source.empty()) return Status::InvalidArgument("paypal needs customer_or_source (vault id)");
    if (options_.payment_source_kind != "card" && options_.payment_source_kind != "paypal") {
      return Status::InvalidArgument("paypal payment_source_kind must be card or paypal");
    }
    nlohmann::json unit = {{"amount", *amount}, {"invoice_id", ReferenceFor(provider_key)}};
    if (!intent.reference.empty()) unit["custom_id"] = intent.reference.substr(0, 127);
    if (!intent.description.empty()) unit["description"] = intent.description.substr(0, 127);
    nlohmann::json source = {{"vault_id", intent.customer_or_source}};
    if (options_.payment_source_kind == "card") {
      source["stored_credential"] = {
          {"payment_initiator", "MERCHANT"}, {"payment_type", "UNSCHEDULED"}, {"usage", "SUBSEQUENT"}};
    }
    const nlohmann::json body = {{"intent", "CAPTURE"},
                                 {"purchase_units", nlohmann::json::array({unit})},
                                 {"payment_source", {{options_.payment_source_kind, source}}}};
    return Keyed(JsonRequest("POST", "/v2/checkout/orders", body), provider_key);
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && !Str(json, "id").empty()) return OrderObject(json);
    return Error(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<nlohmann::json> amount = Amount(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    nlohmann::json body = {{"amount", *amount}, {"invoice_id", ReferenceFor(provider_key)}};
    if (!refund.reason.empty()) body["note_to_payer"] = refund.reason.substr(0, 255);
    return Keyed(JsonRequest("POST", "/v2/payments/captures/" + PercentEncode(refund.payment_id) + "/refund", body),
                 provider_key);
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && !Str(json, "id").empty()) {
      const std::string status = Str(json, "status");
      if (status == "FAILED" || status == "CANCELLED") return Refused(status, "refund " + status);
      return Succeeded(Str(json, "id"), status);
    }
    return Error(answer, json);
  }

 private:
  ProviderRequest Keyed(ProviderRequest r, std::string_view provider_key) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    r.headers.emplace_back("PayPal-Request-Id", FitKey(provider_key));
    r.headers.emplace_back("Prefer", "return=representation");
    return r;
  }

  PayPalOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewPayPalAdapter(PayPalOptions options) {
  return std::make_unique<internal::PayPalAdapter>(std::move(options));
}

}  // namespace phasekey::phases
