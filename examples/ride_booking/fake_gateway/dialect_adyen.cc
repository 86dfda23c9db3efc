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
#include <algorithm>

#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 64;

GatewayResponse Error(int status, std::string_view code, std::string_view type, std::string_view message) {
  return JsonResponse(status, nlohmann::json{{"status", status},
                                             {"errorCode", code},
                                             {"message", message},
                                             {"errorType", type}}
                                  .dump());
}

bool IsPaymentsPath(std::string_view path) {
  // "/v71/payments", any version.
  if (!path.starts_with("/v") || !path.ends_with("/payments")) return false;
  std::string_view version = path.substr(2, path.size() - 2 - 9);
  return !version.empty() &&
         std::all_of(version.begin(), version.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class AdyenDialect final : public Dialect {
 public:
  std::string_view name() const override { return "adyen"; }
  std::string_view id_prefix() const override { return "psp"; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    if (!IsPaymentsPath(request.path)) return std::nullopt;
    if (request.method != "POST") return MethodNotAllowed("POST");
    ParsedCharge charge;
    charge.key = FindHeader(request.headers, "Idempotency-Key");
    if (charge.key && (charge.key->empty() || charge.key->size() > kMaxKeyLength)) {
      return Error(422, "702", "validation", "Idempotency-Key is 1 to 64 characters");
    }
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

  GatewayResponse Failed(std::string_view message) const override {
    return Error(500, "000", "internal", message);
  }

  GatewayResponse InFlight(const std::string&) const override {
    GatewayResponse response =
        Error(422, "704", "validation", "request already processed or in progress");
    response.headers.emplace_back("transient-error", "true");
    return response;
  }
};

}  // namespace

std::unique_ptr<Dialect> NewAdyenDialect() { return std::make_unique<AdyenDialect>(); }

}  // namespace fake_gateway
