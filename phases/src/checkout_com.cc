// Checkout.com Payments API.
//
// Facts (https://www.checkout.com/docs/payments/manage-payments/idempotency,
// https://www.checkout.com/docs/resources/calculating-the-amount,
// https://checkout.com/docs/payments/manage-payments/get-a-list-of-payments,
// https://api-reference.checkout.com/#operation/requestAPaymentOrPayout):
//   - Cko-Idempotency-Key header on payments, captures, refunds, voids. The
//     key "is cached ... if the request returns a 2xx response code"; a 4xx
//     or 5xx is not saved "and the payment is reattempted". Keys expire after
//     24 h by default (an older page said 120 s in sandbox).
//   - So a 5xx under a key protects nothing: the payment may have happened
//     and a resend would run again. Safer reading: 5xx is outcome unknown,
//     and the next run reconciles through GET /payments?reference=.
//   - Concurrent requests with one key: older pages say 429, newer 409; both
//     are retried.
//   - No maximum length is documented; "We strongly recommend using V4
//     UUIDs". Safer reading: send a UUID (name-based, so it stays stable).
//   - reference: we keep it within 50 characters (the limit the API
//     reference gives for payment requests; some payment methods allow less).
//   - amount: minor units, at most nine digits; for three-decimal
//     currencies (BHD, IQD, JOD, KWD, LYD, OMR, TND) the last digit must be 0.
//   - 201 with approved true: paid; approved false (status Declined): a
//     decline; 202 Pending with a redirect link: the customer must act
//     (refused off-session); 422 request_invalid: refused.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://api.checkout.com";

AdapterInfo CheckoutComInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "checkout_com";
  info.display_name = "Checkout.com (Payments API)";
  info.placement = KeyPlacement::kHeader;
  info.key_field = "Cko-Idempotency-Key";
  info.key_rules = {36, 36, KeyAlphabet::kUuid};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24);
  info.retention_note = "24 h, and only 2xx answers are cached";
  info.key_replays_all_answers = false;  // only 2xx answers are cached
  info.conflict = "concurrent: 409 (earlier 429): retry; 4xx/5xx not cached";
  info.reference_field = "reference";
  info.reference_rules = {1, 50, KeyAlphabet::kPrintableAscii};
  info.has_lookup = true;
  // GET /payments?reference= lists payments by reference; Checkout.com does
  // not say how soon a new payment is listed. Safer reading: as Stripe's
  // search, up to an hour behind (a retrieve by id would be exact, but the
  // id is what a lost answer loses).
  info.lookup_window = std::chrono::hours(1);
  info.reconciliation = "GET /payments?reference=";
  info.sources = {"https://www.checkout.com/docs/payments/manage-payments/idempotency",
                  "https://www.checkout.com/docs/resources/calculating-the-amount",
                  "https://checkout.com/docs/payments/manage-payments/get-a-list-of-payments",
                  "https://api-reference.checkout.com/#operation/requestAPaymentOrPayout"};
  return info;
}

Result<std::int64_t> CkoAmount(std::int64_t minor, const std::string& currency) {
  Result<std::int64_t> amount = RescaleMinor(minor, currency, CurrencyExponent(currency));
  if (!amount) return amount;
  if (CurrencyExponent(currency) == 3 && *amount % 10 != 0) {
    return Status::InvalidArgument("Checkout.com requires three-decimal amounts to end in 0");
  }
  if (*amount > 999999999) return Status::InvalidArgument("Checkout.com amounts have at most nine digits");
  return amount;
}

// A payment as the create answer or the list shows it.
Classification PaymentObject(const nlohmann::json& payment) {
  const std::string status = Str(payment, "status");
  const std::string id = Str(payment, "id");
  const nlohmann::json& approved = At(payment, {"approved"});
  if (approved.is_boolean() && !approved.get<bool>()) {
    return Declined(Str(payment, "response_code"), Str(payment, "response_summary"));
  }
  if (status == "Declined") return Declined(Str(payment, "response_code"), Str(payment, "response_summary"));
  if (status == "Authorized" || status == "Captured" || status == "Card Verified" || status == "Paid" ||
      status == "Partially Captured" || (approved.is_boolean() && approved.get<bool>())) {
    return Succeeded(id, status);
  }
  if (status == "Canceled" || status == "Voided" || status == "Expired") return Refused(status, "payment " + status);
  return Unknown("unexpected_status", "payment status '" + status + "'");
}

class CheckoutComAdapter final : public ProviderAdapter {
 public:
  explicit CheckoutComAdapter(CheckoutComOptions o)
      : ProviderAdapter(WithLookupWindow(CheckoutComInfo(o.key_retention), o.lookup_window),
                        o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::int64_t> amount = CkoAmount(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    const std::string& id = intent.customer_or_source;
    if (id.empty()) return Status::InvalidArgument("checkout_com needs customer_or_source");
    nlohmann::json body = {{"source", {{"type", id.starts_with("cus_") ? "customer" : "id"}, {"id", id}}},
                           {"amount", *amount},
                           {"currency", UpperCurrency(intent.currency)},
                           {"reference", ReferenceFor(provider_key)},
                           {"payment_type", "Unscheduled"},
                           {"merchant_initiated", true},
                           {"capture", true}};
    if (!intent.description.empty()) body["description"] = intent.description.substr(0, 100);
    if (!options_.processing_channel_id.empty()) body["processing_channel_id"] = options_.processing_channel_id;
    if (!intent.reference.empty()) body["metadata"] = {{"order_reference", intent.reference}};
    return Keyed(JsonRequest("POST", "/payments", body), provider_key);
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.status == 201) return PaymentObject(json);
    if (answer.status == 202) {
      if (!At(json, {"_links", "redirect"}).is_null()) {
        return Refused("Pending", "the customer must complete a redirect; not possible off-session");
      }
      return Succeeded(Str(json, "id"), "Pending");
    }
    return Error(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<std::int64_t> amount = CkoAmount(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    const nlohmann::json body = {{"amount", *amount}, {"reference", ReferenceFor(provider_key)}};
    return Keyed(JsonRequest("POST", "/payments/" + PercentEncode(refund.payment_id) + "/refunds", body), provider_key);
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.status == 202) return Succeeded(Str(json, "action_id"), "Pending");
    return Error(answer, json);
  }

  Result<ProviderRequest> BuildLookup(std::string_view reference) const override {
    return Authorized(GetRequest("/payments?reference=" + PercentEncode(reference) + "&limit=10"));
  }

  Lookup ParseLookup(const ProviderAnswer& answer) const override {
    const nlohmann::json json = ParseJson(answer.body);
    const nlohmann::json& data = At(json, {"data"});
    if (answer.transport != ProviderAnswer::Transport::kAnswered || answer.status != 200 || !data.is_array()) {
      return {Lookup::Kind::kUnknown, {}, "list failed: " + std::to_string(answer.status) + " " + answer.error};
    }
    Lookup declined{Lookup::Kind::kNotFound, {}, "no payment with this reference"};
    for (const auto& payment : data) {
      const Classification c = PaymentObject(payment);
      if (c.kind == Classification::Kind::kSucceeded) return {Lookup::Kind::kFound, c, "paid"};
      if (c.kind == Classification::Kind::kOutcomeUnknown) return {Lookup::Kind::kUnknown, {}, c.message};
      if (c.declined) declined = {Lookup::Kind::kFound, c, "declined"};
    }
    return declined;
  }

 private:
  static Classification Error(const ProviderAnswer& answer, const nlohmann::json& json) {
    const nlohmann::json& codes = At(json, {"error_codes"});
    std::string code = codes.is_array() && !codes.empty() && codes[0].is_string() ? codes[0].get<std::string>() : "";
    if (code.empty()) code = Str(json, "error_type");
    if (answer.status == 409) return RetryLater(code.empty() ? "conflict" : code, "concurrent request with this key");
    if (answer.status >= 500)
      return Unknown(code.empty() ? "http_" + std::to_string(answer.status) : code,
                     "5xx answers are not cached under the key");
    return HttpFallback(answer, /*keyed=*/true, code, Str(json, "error_type"));
  }

  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    return r;
  }
  ProviderRequest Keyed(ProviderRequest r, std::string_view provider_key) const {
    r = Authorized(std::move(r));
    r.headers.emplace_back("Cko-Idempotency-Key", FitKey(provider_key));
    return r;
  }

  CheckoutComOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewCheckoutComAdapter(CheckoutComOptions options) {
  return std::make_unique<internal::CheckoutComAdapter>(std::move(options));
}

}  // namespace phasekey::phases
