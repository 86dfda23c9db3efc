// The Moyasar dialect: Payments API v1 with token sources.
//
//   POST /v1/payments  JSON {given_id? (a UUID: the key, and the payment's
//        id), amount (minor units), currency, description, callback_url,
//        source {type: "token", token}, metadata?}. Answers:
//     201  {id: given_id, status: "paid", amount, currency, source {message}}
//     201  status "failed" (source.message "DECLINED") for a token ending in
//          _13: Moyasar answers a declined card with 201 (stored)
//     400  {type: "invalid_request_error", errors} for a bad body (not stored)
//     500  {type: "api_error"}: injected failure (nothing stored)
//     A create whose given_id is stored gets the original answer; one whose
//     given_id is in flight waits for it.
//   GET /v1/payments/{id}  the payment (200): the latest answer ever stored
//        under that given_id, also after the key's retention has passed or
//        POST /_forget_keys (a provider forgets keys, not payments); 404
//        {type: "record_not_found"} if there is none. A payment created
//        without a given_id cannot be fetched. A retrieve by id: never
//        lagged (lookup_lag); at Faults::lookup_fail_rate a 500 api_error.
//   POST /v1/payments/{id}/refund  JSON {amount?} (no key: Moyasar takes
//        none on refunds). Answers 200 with the payment, status
//        "refunded" and "refunded": the amount; 400 invalid_request_error
//        for a payment refunded before or not refunded whole, 404
//        record_not_found for an unknown one (not stored).
#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"

namespace fake_gateway {
namespace {

constexpr std::string_view kPaymentsPath = "/v1/payments";
constexpr std::string_view kRefund = "/refund";

GatewayResponse Error(int status, std::string_view type, std::string_view message) {
  return JsonResponse(status, nlohmann::json{{"type", type}, {"message", message}}.dump());
}

bool IsUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

nlohmann::json PaymentObject(const std::string& id, std::string_view status, std::string_view message,
                             const ParsedCharge& charge) {
  const nlohmann::json body = nlohmann::json::parse(charge.canonical);
  return {{"id", id},
          {"status", status},
          {"amount", charge.params.amount},
          {"fee", 0},
          {"currency", UpperCurrency(charge.params.currency)},
          {"description", StringAt(body, {"description"})},
          {"callback_url", StringAt(body, {"callback_url"})},
          {"metadata", body.value("metadata", nlohmann::json())},
          {"source", {{"type", "token"}, {"company", "visa"}, {"message", message}}}};
}

class MoyasarDialect final : public Dialect {
 public:
  std::string_view name() const override { return "moyasar"; }
  std::string_view id_prefix() const override { return ""; }
  bool WaitsForInFlight() const override { return true; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    if (request.path == kPaymentsPath) {
      return request.method == "POST" ? Create(request, desk) : MethodNotAllowed("POST");
    }
    if (request.path.starts_with(std::string(kPaymentsPath) + "/") && request.path.ends_with(kRefund)) {
      if (request.method != "POST") return MethodNotAllowed("POST");
      const std::string_view id = request.path.substr(kPaymentsPath.size() + 1);
      return CreateRefund(request, std::string(id.substr(0, id.size() - kRefund.size())), desk);
    }
    if (request.path.starts_with(std::string(kPaymentsPath) + "/")) {
      if (request.method != "GET") return MethodNotAllowed("GET");
      const std::string id(request.path.substr(kPaymentsPath.size() + 1));
      if (desk.LookupFails()) return Failed("Internal server error (injected lookup fault)");
      if (auto recorded = desk.Recorded(id)) return JsonResponse(200, recorded->body);
      return Error(404, "record_not_found", "Object not found");
    }
    return std::nullopt;
  }

  Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const override {
    return {201, PaymentObject(record.id, "paid", "APPROVED", charge).dump()};
  }

  Answer Declined(const ParsedCharge& charge, const std::string& payment_id) const override {
    return {201, PaymentObject(payment_id, "failed", "DECLINED", charge).dump()};
  }

  Answer Refunded(const RefundRecord& refund, const ChargeRecord& payment) const override {
    return {200, nlohmann::json{{"id", payment.id},
                                {"status", "refunded"},
                                {"amount", payment.amount},
                                {"refunded", refund.amount},
                                {"currency", UpperCurrency(payment.currency)},
                                {"description", payment.description.value_or("")}}
                     .dump()};
  }

  GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const override {
    if (problem == RefundProblem::kUnknownPayment) return Error(404, "record_not_found", "Object not found");
    return Error(400, "invalid_request_error", message);
  }

  GatewayResponse Failed(std::string_view message) const override { return Error(500, "api_error", message); }

  // Never asked: a request whose given_id is in flight waits.
  GatewayResponse InFlight(const std::string&) const override {
    return Error(500, "api_error", "a payment with this given_id is in progress");
  }

 private:
  // POST /v1/payments/{payment}/refund.
  GatewayResponse CreateRefund(const DialectRequest& request, const std::string& payment, ChargeDesk& desk) const {
    std::optional<nlohmann::json> body = ParseJsonObject(request.body.empty() ? "{}" : request.body);
    if (!body || payment.empty() || payment.find('/') != std::string::npos) {
      return Error(400, "invalid_request_error", "POST /v1/payments/{id}/refund with a JSON object");
    }
    ParsedRefund refund;
    refund.payment_id = payment;
    if (body->contains("amount")) {
      refund.amount = MinorAmount((*body)["amount"]);
      if (!refund.amount) return Error(400, "invalid_request_error", "amount is invalid");
    }
    refund.canonical = "refund:" + payment + ":" + CanonicalJson(*body);
    return desk.Refund(*this, refund);
  }

  GatewayResponse Create(const DialectRequest& request, ChargeDesk& desk) const {
    std::optional<nlohmann::json> body = ParseJsonObject(request.body);
    if (!body) return Error(400, "invalid_request_error", "The body is not a JSON object");
    std::optional<std::string> currency = Currency(StringAt(*body, {"currency"}));
    std::optional<int64_t> amount = MinorAmount(body->value("amount", nlohmann::json()));
    if (!currency || !amount) return Error(400, "invalid_request_error", "amount or currency is invalid");
    const std::string token = StringAt(*body, {"source", "token"});
    if (StringAt(*body, {"source", "type"}) != "token" || token.empty()) {
      return Error(400, "invalid_request_error", "source must be {type: token, token}");
    }
    if (StringAt(*body, {"callback_url"}).empty()) {
      return Error(400, "invalid_request_error", "callback_url is required");
    }
    ParsedCharge charge;
    if (std::string given_id = StringAt(*body, {"given_id"}); !given_id.empty()) {
      if (!IsUuid(given_id)) return Error(400, "invalid_request_error", "given_id must be a UUID");
      charge.key = given_id;
      charge.ledger_key = given_id;
      charge.payment_id = given_id;
    }
    charge.params = {*amount, *currency, token, std::nullopt, {}};
    if (std::string description = StringAt(*body, {"description"}); !description.empty()) {
      charge.params.description = description;
    }
    charge.declined = IsDeclinedId(token);
    charge.canonical = CanonicalJson(*body);
    return desk.Charge(*this, charge);
  }
};

}  // namespace

std::unique_ptr<Dialect> NewMoyasarDialect() { return std::make_unique<MoyasarDialect>(); }

}  // namespace fake_gateway
