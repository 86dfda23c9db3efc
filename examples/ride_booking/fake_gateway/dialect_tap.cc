// The Tap dialect: Charges API v2.
//
//   POST /v2/charges  JSON {amount (major units, a number), currency,
//        reference {transaction, order, idempotent?}, customer {id},
//        source {id}, redirect {url}, description?}. reference.idempotent is
//        the key. Answers:
//     200  {id: "chg_...", object: "charge", status: "CAPTURED", amount,
//          currency, reference, response {code: "000", message}}
//     200  status "DECLINED" (response code "051") for customer.id 13
//     400  {errors: [{code, description}]} for a bad body (not stored)
//     500  injected failure (nothing stored)
//     A request whose reference.idempotent is stored gets the original answer,
//     whatever the rest of its body ("returns the original response"); one
//     whose key is in flight waits for it and gets its answer.
//   POST /v2/refunds  JSON {charge_id, amount (major units), currency,
//        reason, reference {merchant, idempotent?}}; reference.idempotent is
//        the key (one key space with charges). Answers:
//     200  {id: "re_...", object: "refund", status: "REFUNDED", charge_id,
//          amount, currency} (stored, replayed for the key whatever the body)
//     400  {errors: [...]} for a bad body, an unknown charge, one refunded
//          before, or one not refunded whole (not stored)
#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"

namespace fake_gateway {
namespace {

GatewayResponse Errors(int status, std::string_view code, std::string_view description) {
  return JsonResponse(status, nlohmann::json{{"errors", {{{"code", code}, {"description", description}}}}}.dump());
}

nlohmann::json ChargeObject(const std::string& id, std::string_view status, std::string_view code,
                            std::string_view message, const ParsedCharge& charge) {
  const nlohmann::json body = nlohmann::json::parse(charge.canonical);
  return {{"id", id},
          {"object", "charge"},
          {"live_mode", false},
          {"status", status},
          {"amount", nlohmann::json::parse(FormatMajor(charge.params.amount, charge.params.currency))},
          {"currency", UpperCurrency(charge.params.currency)},
          {"description", StringAt(body, {"description"})},
          {"reference", body.value("reference", nlohmann::json::object())},
          {"customer", {{"id", charge.params.customer}}},
          {"response", {{"code", code}, {"message", message}}}};
}

class TapDialect final : public Dialect {
 public:
  std::string_view name() const override { return "tap"; }
  std::string_view id_prefix() const override { return "chg_"; }
  bool WaitsForInFlight() const override { return true; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    const bool refund = request.path == "/v2/refunds";
    if (request.path != "/v2/charges" && !refund) return std::nullopt;
    if (request.method != "POST") return MethodNotAllowed("POST");
    std::optional<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body) return Errors(400, "1100", "The body is not a JSON object");
    if (refund) return CreateRefund(*body, desk);
    std::optional<std::string> currency = Currency(StringAt(*body, {"currency"}));
    if (!currency) return Errors(400, "1117", "Currency is invalid");
    std::optional<int64_t> amount = MajorAmount(body->value("amount", nlohmann::json()), *currency);
    if (!amount) return Errors(400, "1118", "Amount is invalid");
    const std::string customer = StringAt(*body, {"customer", "id"});
    if (customer.empty() || StringAt(*body, {"source", "id"}).empty()) {
      return Errors(400, "1108", "customer.id and source.id are required");
    }
    if (StringAt(*body, {"redirect", "url"}).empty()) return Errors(400, "1113", "redirect.url is required");
    ParsedCharge charge;
    if (std::string key = StringAt(*body, {"reference", "idempotent"}); !key.empty()) {
      charge.key = key;
      charge.ledger_key = key;
    }
    charge.params = {*amount, *currency, customer, std::nullopt, {}};
    if (std::string description = StringAt(*body, {"description"}); !description.empty()) {
      charge.params.description = description;
    }
    charge.declined = IsDeclinedId(customer);
    charge.canonical = CanonicalJson(*body);
    return desk.Charge(*this, charge);
  }

  Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const override {
    return {200, ChargeObject(record.id, "CAPTURED", "000", "Captured", charge).dump()};
  }

  Answer Declined(const ParsedCharge& charge, const std::string& payment_id) const override {
    return {200, ChargeObject(payment_id, "DECLINED", "051", "Declined, Insufficient Funds", charge).dump()};
  }

  Answer Refunded(const RefundRecord& refund, const ChargeRecord& payment) const override {
    return {200, nlohmann::json{{"id", refund.id},
                                {"object", "refund"},
                                {"status", "REFUNDED"},
                                {"charge_id", payment.id},
                                {"amount", nlohmann::json::parse(FormatMajor(refund.amount, payment.currency))},
                                {"currency", UpperCurrency(payment.currency)}}
                     .dump()};
  }

  GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const override {
    return Errors(400, problem == RefundProblem::kUnknownPayment ? "1141" : "1143", message);
  }

  GatewayResponse Failed(std::string_view message) const override { return Errors(500, "5000", message); }

  // Never asked: a request whose key is in flight waits (WaitsForInFlight).
  GatewayResponse InFlight(const std::string&) const override {
    return Errors(500, "5001", "a request with this idempotent string is in progress");
  }

 private:
  // POST /v2/refunds.
  GatewayResponse CreateRefund(const nlohmann::json& body, ChargeDesk& desk) const {
    ParsedRefund refund;
    refund.payment_id = StringAt(body, {"charge_id"});
    if (refund.payment_id.empty()) return Errors(400, "1141", "charge_id is required");
    std::optional<std::string> currency = Currency(StringAt(body, {"currency"}));
    if (!currency) return Errors(400, "1117", "Currency is invalid");
    refund.amount = MajorAmount(body.value("amount", nlohmann::json()), *currency);
    if (!refund.amount) return Errors(400, "1118", "Amount is invalid");
    if (std::string key = StringAt(body, {"reference", "idempotent"}); !key.empty()) refund.key = key;
    refund.canonical = "refund:" + CanonicalJson(body);
    return desk.Refund(*this, refund);
  }
};

}  // namespace

std::unique_ptr<Dialect> NewTapDialect() { return std::make_unique<TapDialect>(); }

}  // namespace fake_gateway
