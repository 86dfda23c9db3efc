// The HyperPay dialect: OPPWA server-to-server payments with a stored
// registration. There is no idempotency key: every request executes, and
// merchantTransactionId is only recorded (the ledger shows it as the
// charge's idempotency_key) and searchable.
//
//   POST /v1/registrations/{id}/payments  form-encoded entityId, amount
//        ("20.00"), currency ("USD"), paymentType (DB or PA),
//        merchantTransactionId, and optional standingInstruction.*,
//        descriptor, customParameters[...]. Answers:
//     200  {id, paymentType, amount, currency, merchantTransactionId,
//          result {code: "000.100.110", description}, timestamp}
//     400  result.code "800.100.151" (declined) for registration id 13; not
//          recorded, so the query below does not list it
//     400  result.code "200.300.404" (invalid parameter) for a bad body
//     500  result.code "900.100.300" (timeout, uncertain result): injected
//          failure; nothing was charged
//   GET /v3/query?entityId=&merchantTransactionId=  200 {result {code
//        "000.000.100"}, payments: [...]} listing every payment made with
//        that merchantTransactionId, or {result {code "700.400.580"}} when
//        there is none. It reads the ledger's charges: a payment stays listed
//        for good (HyperPay has no keys to forget), from
//        GatewayOptions::lookup_lag after it was made. At
//        Faults::lookup_fail_rate it answers 500 "900.100.300" instead.
//   POST /v1/payments/{id}  form-encoded entityId, amount, currency,
//        paymentType=RF: a refund (back-office operation) of the whole
//        payment {id}; no key, every request executes. Answers 200 {id,
//        referencedId: {id}, paymentType: "RF", amount, currency, result
//        {code: "000.100.110"}}; 400 result.code "700.400.200" (cannot
//        refund) for a payment refunded before or not refunded whole,
//        "700.400.100" for an unknown one, "200.300.404" for a bad body.
#include <fmt/format.h>

#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"
#include "fake_gateway/form.h"

namespace fake_gateway {
namespace {

constexpr std::string_view kRegistrations = "/v1/registrations/";
constexpr std::string_view kPayments = "/payments";
constexpr std::string_view kPaymentPrefix = "/v1/payments/";
constexpr char kSuccess[] = "000.100.110";

nlohmann::json Result(std::string_view code, std::string_view description) {
  return {{"code", code}, {"description", description}};
}

GatewayResponse Refusal(int status, std::string_view code, std::string_view description) {
  return JsonResponse(status, nlohmann::json{{"result", Result(code, description)}}.dump());
}

nlohmann::json Payment(const std::string& id, int64_t amount, const std::string& currency, const std::string& reference,
                       std::string_view code, std::string_view description) {
  return {{"id", id},
          {"paymentType", "DB"},
          {"amount", FormatMajor(amount, currency)},
          {"currency", UpperCurrency(currency)},
          {"merchantTransactionId", reference},
          {"result", Result(code, description)}};
}

// A form body as a JSON object of its fields (the last of a repeated name),
// or nullopt when it is not form encoding.
std::optional<nlohmann::json> FormObject(std::string_view body) {
  std::optional<FormFields> form = ParseForm(body);
  if (!form) return std::nullopt;
  nlohmann::json fields = nlohmann::json::object();
  for (auto& [name, value] : *form) fields[name] = value;
  return fields;
}

// The amount field in minor units of the currency field, or nullopt.
std::optional<int64_t> Amount(const nlohmann::json& fields) {
  std::optional<std::string> currency = Currency(StringAt(fields, {"currency"}));
  return currency ? MajorAmount(fields.value("amount", nlohmann::json()), *currency) : std::nullopt;
}

// The registration id of "/v1/registrations/{id}/payments", or "".
std::string RegistrationOf(std::string_view path) {
  if (!path.starts_with(kRegistrations) || !path.ends_with(kPayments)) return "";
  if (path.size() <= kRegistrations.size() + kPayments.size()) return "";
  std::string_view id = path.substr(kRegistrations.size(), path.size() - kRegistrations.size() - kPayments.size());
  return id.find('/') == std::string_view::npos ? std::string(id) : "";
}

class HyperPayDialect final : public Dialect {
 public:
  std::string_view name() const override { return "hyperpay"; }
  std::string_view id_prefix() const override { return "8ac7a4a1"; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    if (request.path == "/v3/query") {
      return request.method == "GET" ? Query(request, desk) : MethodNotAllowed("GET");
    }
    if (request.path.starts_with(kPaymentPrefix) && request.path.size() > kPaymentPrefix.size() &&
        request.path.find('/', kPaymentPrefix.size()) == std::string_view::npos) {
      if (request.method != "POST") return MethodNotAllowed("POST");
      return CreateRefund(request, std::string(request.path.substr(kPaymentPrefix.size())), desk);
    }
    const std::string registration = RegistrationOf(request.path);
    if (registration.empty()) return std::nullopt;
    if (request.method != "POST") return MethodNotAllowed("POST");
    return Create(request, registration, desk);
  }

  Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const override {
    return {200, Payment(record.id, record.amount, record.currency, charge.ledger_key, kSuccess,
                         "Request successfully processed in 'Merchant in Integrator Test Mode'")
                     .dump()};
  }

  Answer Declined(const ParsedCharge& charge, const std::string& payment_id) const override {
    return {400, Payment(payment_id, charge.params.amount, charge.params.currency, charge.ledger_key, "800.100.151",
                         "transaction declined (invalid card)")
                     .dump()};
  }

  Answer Refunded(const RefundRecord& refund, const ChargeRecord& payment) const override {
    nlohmann::json body = Payment(refund.id, refund.amount, payment.currency, "", kSuccess,
                                  "Request successfully processed in 'Merchant in Integrator Test Mode'");
    body["paymentType"] = "RF";
    body["referencedId"] = payment.id;
    body.erase("merchantTransactionId");
    return {200, body.dump()};
  }

  GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const override {
    return Refusal(400, problem == RefundProblem::kUnknownPayment ? "700.400.100" : "700.400.200", message);
  }

  GatewayResponse Failed(std::string_view message) const override {
    return Refusal(500, "900.100.300", fmt::format("timeout, uncertain result: {}", message));
  }

  // Never asked: without keys nothing is ever in flight.
  GatewayResponse InFlight(const std::string&) const override { return Refusal(500, "900.100.300", "in flight"); }

 private:
  // POST /v1/payments/{payment} with paymentType=RF.
  GatewayResponse CreateRefund(const DialectRequest& request, const std::string& payment, ChargeDesk& desk) const {
    std::optional<nlohmann::json> fields = FormObject(request.body);
    if (!fields) return Refusal(400, "200.300.404", "invalid or missing parameter: body");
    ParsedRefund refund;
    refund.amount = Amount(*fields);
    if (!refund.amount || StringAt(*fields, {"entityId"}).empty() || StringAt(*fields, {"paymentType"}) != "RF") {
      return Refusal(400, "200.300.404", "invalid or missing parameter: entityId, amount, currency, paymentType=RF");
    }
    refund.payment_id = payment;
    refund.canonical = "refund:" + payment + ":" + CanonicalJson(*fields);
    return desk.Refund(*this, refund);
  }

  GatewayResponse Create(const DialectRequest& request, const std::string& registration, ChargeDesk& desk) const {
    std::optional<nlohmann::json> form = FormObject(request.body);
    if (!form) return Refusal(400, "200.300.404", "invalid or missing parameter: body");
    const nlohmann::json& fields = *form;
    std::optional<std::string> currency = Currency(StringAt(fields, {"currency"}));
    std::optional<int64_t> amount = Amount(fields);
    if (!currency || !amount) return Refusal(400, "200.300.404", "invalid or missing parameter: amount, currency");
    if (StringAt(fields, {"entityId"}).empty()) {
      return Refusal(400, "200.300.404", "invalid or missing parameter: entityId");
    }
    const std::string type = StringAt(fields, {"paymentType"});
    if (type != "DB" && type != "PA") return Refusal(400, "200.300.404", "invalid or missing parameter: paymentType");
    ParsedCharge charge;
    charge.ledger_key = StringAt(fields, {"merchantTransactionId"});
    charge.params = {*amount, *currency, registration, std::nullopt, {}};
    if (std::string descriptor = StringAt(fields, {"descriptor"}); !descriptor.empty()) {
      charge.params.description = descriptor;
    }
    charge.declined = IsDeclinedId(registration);
    charge.canonical = CanonicalJson(fields);
    return desk.Charge(*this, charge);
  }

  GatewayResponse Query(const DialectRequest& request, ChargeDesk& desk) const {
    std::optional<std::string> reference = QueryParam(request.query, "merchantTransactionId");
    if (!QueryParam(request.query, "entityId") || !reference || reference->empty()) {
      return Refusal(400, "200.300.404", "invalid or missing parameter: entityId, merchantTransactionId");
    }
    if (desk.LookupFails()) return Failed("timeout, uncertain result (injected lookup fault)");
    nlohmann::json payments = nlohmann::json::array();
    for (const ChargeRecord& record : desk.Searchable()) {
      if (record.idempotency_key != *reference) continue;
      payments.push_back(Payment(record.id, record.amount, record.currency, *reference, kSuccess,
                                 "Request successfully processed in 'Merchant in Integrator Test Mode'"));
    }
    if (payments.empty()) return Refusal(200, "700.400.580", "cannot find transaction");
    return JsonResponse(
        200, nlohmann::json{{"result", Result("000.000.100", "successful request")}, {"payments", payments}}.dump());
  }
};

}  // namespace

std::unique_ptr<Dialect> NewHyperPayDialect() { return std::make_unique<HyperPayDialect>(); }

}  // namespace fake_gateway
