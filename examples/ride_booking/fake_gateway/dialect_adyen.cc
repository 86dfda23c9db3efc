// The Adyen dialect: Checkout API payments with a stored card.
//
//   POST /v<N>/payments  JSON {merchantAccount, amount {value (minor units),
//        currency}, reference, paymentMethod {storedPaymentMethodId},
//        shopperReference, shopperStatement?}; optional Idempotency-Key
//        header (1..64 characters). Answers:
//     200  {pspReference, resultCode: "Authorised", merchantReference, amount}
//     200  resultCode "Refused" (refusalReason, refusalReasonCode "2") for
//          shopperReference 13: Adyen answers declines with 200 (stored)
//     422  errorCode 704 with the header transient-error: true while a
//          request with the same key is in flight
//     422  errorType validation for a bad body (not stored)
//     500  errorType internal: injected failure (nothing stored)
//     A stored answer is replayed for the same key, whatever the body
//     (Adyen checks the key, not the payload).
//   POST /v<N>/payments/{pspReference}/refunds  JSON {merchantAccount,
//        amount {value, currency}, reference}; Idempotency-Key as above
//        (one key space with payments). Answers:
//     201  {paymentPspReference, pspReference, status: "received", amount}
//          (stored, replayed like a payment)
//     422  errorCode 167 "Original pspReference required for this
//          operation" for an unknown payment, 137 for one refunded before,
//          or one not refunded whole (not stored)
#include <algorithm>
#include <optional>
#include <string>

#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 64;

GatewayResponse Error(int status, std::string_view code, std::string_view type, std::string_view message) {
  return JsonResponse(
      status,
      nlohmann::json{{"status", status}, {"errorCode", code}, {"message", message}, {"errorType", type}}.dump());
}

// The rest of `path` after "/v<digits>/payments", or nullopt when it does
// not start so.
std::optional<std::string_view> AfterPayments(std::string_view path) {
  constexpr std::string_view kPayments = "/payments";
  if (!path.starts_with("/v")) return std::nullopt;
  const size_t digits = path.find_first_not_of("0123456789", 2);
  if (digits == 2 || digits == std::string_view::npos) return std::nullopt;
  if (path.substr(digits, kPayments.size()) != kPayments) return std::nullopt;
  return path.substr(digits + kPayments.size());
}

// "/v71/payments", any version.
bool IsPaymentsPath(std::string_view path) { return AfterPayments(path) == std::string_view(); }

// The {pspReference} of "/v71/payments/{pspReference}/refunds", or "".
std::string RefundedPayment(std::string_view path) {
  constexpr std::string_view kRefunds = "/refunds";
  const std::optional<std::string_view> rest = AfterPayments(path);
  if (!rest || !rest->starts_with("/") || !rest->ends_with(kRefunds)) return "";
  const std::string_view id = rest->substr(1, rest->size() - 1 - kRefunds.size());
  return id.find('/') == std::string_view::npos ? std::string(id) : "";
}

class AdyenDialect final : public Dialect {
 public:
  std::string_view name() const override { return "adyen"; }
  std::string_view id_prefix() const override { return "psp"; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    if (const std::string payment = RefundedPayment(request.path); !payment.empty()) {
      return request.method == "POST" ? CreateRefund(request, payment, desk) : MethodNotAllowed("POST");
    }
    if (!IsPaymentsPath(request.path)) return std::nullopt;
    if (request.method != "POST") return MethodNotAllowed("POST");
    ParsedCharge charge;
    charge.key = FindHeader(request.headers, "Idempotency-Key");
    if (auto bad = CheckKey(charge.key)) return std::move(*bad);
    std::optional<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body) return Error(422, "702", "validation", "Unable to parse the JSON body");
    const nlohmann::json& amount = (*body)["amount"];
    std::optional<std::string> currency = Currency(StringAt(*body, {"amount", "currency"}));
    std::optional<int64_t> value =
        amount.is_object() ? MinorAmount(amount.value("value", nlohmann::json())) : std::nullopt;
    if (!currency || !value) return Error(422, "100", "validation", "Required field 'amount' is not valid");
    if (StringAt(*body, {"merchantAccount"}).empty()) {
      return Error(422, "901", "security", "Invalid Merchant Account");
    }
    const std::string shopper = StringAt(*body, {"shopperReference"});
    if (shopper.empty() || StringAt(*body, {"paymentMethod", "storedPaymentMethodId"}).empty()) {
      return Error(422, "800", "validation", "Contract not found (shopperReference, storedPaymentMethodId)");
    }
    charge.params.amount = *value;
    charge.params.currency = *currency;
    charge.params.customer = shopper;
    if (std::string statement = StringAt(*body, {"shopperStatement"}); !statement.empty()) {
      charge.params.description = statement;
    }
    charge.canonical = CanonicalJson(*body);
    charge.declined = IsDeclinedId(shopper);
    if (charge.key) charge.ledger_key = *charge.key;
    return desk.Charge(*this, charge);
  }

  Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const override {
    nlohmann::json canonical = nlohmann::json::parse(charge.canonical);
    return {200, nlohmann::json{{"pspReference", record.id},
                                {"resultCode", "Authorised"},
                                {"merchantReference", StringAt(canonical, {"reference"})},
                                {"amount", {{"value", record.amount}, {"currency", UpperCurrency(record.currency)}}}}
                     .dump()};
  }

  Answer Declined(const ParsedCharge& charge, const std::string& payment_id) const override {
    nlohmann::json canonical = nlohmann::json::parse(charge.canonical);
    return {200, nlohmann::json{{"pspReference", payment_id},
                                {"resultCode", "Refused"},
                                {"refusalReason", "Refused"},
                                {"refusalReasonCode", "2"},
                                {"merchantReference", StringAt(canonical, {"reference"})}}
                     .dump()};
  }

  Answer Refunded(const RefundRecord& refund, const ChargeRecord& payment) const override {
    return {201, nlohmann::json{{"paymentPspReference", payment.id},
                                {"pspReference", refund.id},
                                {"status", "received"},
                                {"amount", {{"value", refund.amount}, {"currency", UpperCurrency(payment.currency)}}}}
                     .dump()};
  }

  GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const override {
    if (problem == RefundProblem::kUnknownPayment) {
      return Error(422, "167", "validation", "Original pspReference required for this operation");
    }
    return Error(422, "137", "validation", message);
  }

  GatewayResponse Failed(std::string_view message) const override { return Error(500, "000", "internal", message); }

  GatewayResponse InFlight(const std::string&) const override {
    GatewayResponse response = Error(422, "704", "validation", "request already processed or in progress");
    response.headers.emplace_back("transient-error", "true");
    return response;
  }

 private:
  static std::optional<GatewayResponse> CheckKey(const std::optional<std::string>& key) {
    if (key && (key->empty() || key->size() > kMaxKeyLength)) {
      return Error(422, "702", "validation", "Idempotency-Key is 1 to 64 characters");
    }
    return std::nullopt;
  }

  // POST /v<N>/payments/{payment}/refunds.
  GatewayResponse CreateRefund(const DialectRequest& request, const std::string& payment, ChargeDesk& desk) const {
    ParsedRefund refund;
    refund.key = FindHeader(request.headers, "Idempotency-Key");
    if (auto bad = CheckKey(refund.key)) return std::move(*bad);
    std::optional<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body) return Error(422, "702", "validation", "Unable to parse the JSON body");
    if (StringAt(*body, {"merchantAccount"}).empty()) return Error(422, "901", "security", "Invalid Merchant Account");
    const nlohmann::json& amount = (*body)["amount"];
    refund.amount = amount.is_object() ? MinorAmount(amount.value("value", nlohmann::json())) : std::nullopt;
    if (!refund.amount) return Error(422, "100", "validation", "Required field 'amount' is not valid");
    refund.payment_id = payment;
    (*body)["paymentPspReference"] = payment;
    refund.canonical = "refund:" + CanonicalJson(*body);
    return desk.Refund(*this, refund);
  }
};

}  // namespace

std::unique_ptr<Dialect> NewAdyenDialect() { return std::make_unique<AdyenDialect>(); }

}  // namespace fake_gateway
