// The Square dialect: Payments API CreatePayment.
//
//   POST /v2/payments  JSON {idempotency_key (required, 1..45), source_id,
//        amount_money {amount (minor units), currency}, customer_id?,
//        reference_id?, note?, autocomplete?, location_id?}. Answers:
//     200  {payment: {id, status: "COMPLETED", amount_money, reference_id, ...}}
//     402  {errors: [{category: PAYMENT_METHOD_ERROR, code: GENERIC_DECLINE}],
//          payment: {status: "FAILED"}} for customer_id (or source_id) 13
//     400  IDEMPOTENCY_KEY_REUSED: the key was used with another body
//     400  INVALID_REQUEST_ERROR for a bad body (not stored)
//     500  TEMPORARY_ERROR while the same key is in flight (Square documents
//          no answer for that; this is the one its docs say to retry with
//          the same key)
//     500  INTERNAL_SERVER_ERROR: injected failure (nothing stored)
#include <fmt/format.h>

#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 45;

GatewayResponse Errors(int status, std::string_view category, std::string_view code, std::string_view detail) {
  return JsonResponse(
      status, nlohmann::json{{"errors", {{{"category", category}, {"code", code}, {"detail", detail}}}}}.dump());
}

GatewayResponse Invalid(std::string_view code, std::string_view detail) {
  return Errors(400, "INVALID_REQUEST_ERROR", code, detail);
}

nlohmann::json Payment(const std::string& id, std::string_view status, const ParsedCharge& charge) {
  const nlohmann::json body = nlohmann::json::parse(charge.canonical);
  nlohmann::json payment = {
      {"id", id},
      {"status", status},
      {"amount_money", {{"amount", charge.params.amount}, {"currency", UpperCurrency(charge.params.currency)}}},
      {"source_type", "CARD"},
      {"source_id", StringAt(body, {"source_id"})}};
  for (const char* field : {"customer_id", "reference_id", "note", "location_id"}) {
    if (std::string value = StringAt(body, {field}); !value.empty()) payment[field] = value;
  }
  return payment;
}

class SquareDialect final : public Dialect {
 public:
  std::string_view name() const override { return "square"; }
  std::string_view id_prefix() const override { return "sqpay_"; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    if (request.path != "/v2/payments") return std::nullopt;
    if (request.method != "POST") return MethodNotAllowed("POST");
    std::optional<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body) return Invalid("INVALID_CONTENT_TYPE", "The body is not a JSON object.");
    const std::string key = StringAt(*body, {"idempotency_key"});
    if (key.empty()) return Invalid("MISSING_REQUIRED_PARAMETER", "Field must be set: idempotency_key");
    if (key.size() > kMaxKeyLength) return Invalid("VALUE_TOO_LONG", "idempotency_key is at most 45 characters");
    const std::string source = StringAt(*body, {"source_id"});
    if (source.empty()) return Invalid("MISSING_REQUIRED_PARAMETER", "Field must be set: source_id");
    std::optional<std::string> currency = Currency(StringAt(*body, {"amount_money", "currency"}));
    const nlohmann::json& money = (*body)["amount_money"];
    std::optional<int64_t> amount =
        money.is_object() ? MinorAmount(money.value("amount", nlohmann::json())) : std::nullopt;
    if (!currency || !amount) return Invalid("INVALID_VALUE", "amount_money is not valid");
    ParsedCharge charge;
    charge.key = key;
    charge.ledger_key = key;
    const std::string customer = StringAt(*body, {"customer_id"});
    charge.params = {*amount, *currency, customer.empty() ? source : customer, std::nullopt, {}};
    if (std::string note = StringAt(*body, {"note"}); !note.empty()) charge.params.description = note;
    charge.declined = IsDeclinedId(charge.params.customer);
    body->erase("idempotency_key");
    charge.canonical = CanonicalJson(*body);
    return desk.Charge(*this, charge);
  }

  Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const override {
    return {200, nlohmann::json{{"payment", Payment(record.id, "COMPLETED", charge)}}.dump()};
  }

  Answer Declined(const ParsedCharge& charge, const std::string& payment_id) const override {
    return {402, nlohmann::json{{"errors",
                                 {{{"category", "PAYMENT_METHOD_ERROR"},
                                   {"code", "GENERIC_DECLINE"},
                                   {"detail", "Authorization error: 'GENERIC_DECLINE'"}}}},
                                {"payment", Payment(payment_id, "FAILED", charge)}}
                     .dump()};
  }

  GatewayResponse Failed(std::string_view message) const override {
    return Errors(500, "API_ERROR", "INTERNAL_SERVER_ERROR", message);
  }

  GatewayResponse InFlight(const std::string&) const override {
    return Errors(500, "API_ERROR", "TEMPORARY_ERROR",
                  "A request with this idempotency key is in progress; retry with the same key.");
  }

  GatewayResponse Reused(const std::string&, const StoredResponse&) const override {
    return Invalid("IDEMPOTENCY_KEY_REUSED", "The idempotency key can only be retried with the same request data.");
  }
};

}  // namespace

std::unique_ptr<Dialect> NewSquareDialect() { return std::make_unique<SquareDialect>(); }

}  // namespace fake_gateway
