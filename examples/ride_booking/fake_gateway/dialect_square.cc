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
//   POST /v2/refunds  JSON {idempotency_key (required, 1..45), payment_id,
//        amount_money {amount, currency}, reason?}; one key space with
//        payments. Answers:
//     200  {refund: {id, status: "PENDING", amount_money, payment_id}}
//          (stored, replayed like a payment)
//     404  NOT_FOUND for an unknown payment, 400 REFUND_ALREADY_PENDING for
//          one refunded before, 400 INVALID_VALUE for one not refunded
//          whole (not stored)
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
    const bool refund = request.path == "/v2/refunds";
    if (request.path != "/v2/payments" && !refund) return std::nullopt;
    if (request.method != "POST") return MethodNotAllowed("POST");
    std::optional<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body) return Invalid("INVALID_CONTENT_TYPE", "The body is not a JSON object.");
    const std::string key = StringAt(*body, {"idempotency_key"});
    if (key.empty()) return Invalid("MISSING_REQUIRED_PARAMETER", "Field must be set: idempotency_key");
    if (key.size() > kMaxKeyLength) return Invalid("VALUE_TOO_LONG", "idempotency_key is at most 45 characters");
    if (refund) return CreateRefund(key, std::move(*body), desk);
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

  Answer Refunded(const RefundRecord& refund, const ChargeRecord& payment) const override {
    return {
        200,
        nlohmann::json{{"refund",
                        {{"id", refund.id},
                         {"status", "PENDING"},
                         {"amount_money", {{"amount", refund.amount}, {"currency", UpperCurrency(payment.currency)}}},
                         {"payment_id", payment.id}}}}
            .dump()};
  }

  GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const override {
    if (problem == RefundProblem::kUnknownPayment) return Errors(404, "INVALID_REQUEST_ERROR", "NOT_FOUND", message);
    if (problem == RefundProblem::kAlreadyRefunded) return Invalid("REFUND_ALREADY_PENDING", message);
    return Invalid("INVALID_VALUE", message);
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

 private:
  // POST /v2/refunds, its key checked.
  GatewayResponse CreateRefund(const std::string& key, nlohmann::json body, ChargeDesk& desk) const {
    ParsedRefund refund;
    refund.key = key;
    refund.payment_id = StringAt(body, {"payment_id"});
    if (refund.payment_id.empty()) return Invalid("MISSING_REQUIRED_PARAMETER", "Field must be set: payment_id");
    const nlohmann::json& money = body["amount_money"];
    refund.amount = money.is_object() ? MinorAmount(money.value("amount", nlohmann::json())) : std::nullopt;
    if (!refund.amount) return Invalid("INVALID_VALUE", "amount_money is not valid");
    body.erase("idempotency_key");
    refund.canonical = "refund:" + CanonicalJson(body);
    return desk.Refund(*this, refund);
  }
};

}  // namespace

std::unique_ptr<Dialect> NewSquareDialect() { return std::make_unique<SquareDialect>(); }

}  // namespace fake_gateway
