// HyperPay (OPPWA Open Payment Platform), server-to-server payment with a
// stored registration.
//
// Facts (https://hyperpay.docs.oppwa.com/reference/parameters,
// https://hyperpay.docs.oppwa.com/reference/resultCodes,
// https://hyperpay.docs.oppwa.com/tutorials/reporting/transaction):
//   - No idempotency key. merchantTransactionId is the merchant's reference
//     (we send 8..255 characters) and the transaction report can be queried
//     by it: GET /v3/query?entityId=&merchantTransactionId=. The query "could
//     return multiple results" (Peach Payments' OPP docs), so every payment
//     in the answer is read.
//   - Form-encoded requests, Authorization: Bearer plus entityId. amount is
//     a decimal string with at most two decimals ([0-9]{1,10}(\.[0-9]{2})?):
//     three-decimal currencies must therefore end in 0 (safer reading; no
//     exception is documented).
//   - The HTTP status does not tell the outcome (400 is also returned for a
//     declined payment): result.code does, by the documented patterns:
//       success        ^(000\.000\.|000\.100\.1|000\.[36]|000\.400\.[1][12]0)
//       success, review ^(000\.400\.0[^3]|000\.400\.100)
//       pending        ^(000\.200) and ^(800\.400\.5|100\.400\.500)
//       communication  ^(900\.[1234]00|000\.400\.030) (timeouts: uncertain)
//       system errors  ^(800\.[56]|999\.|600\.1|800\.800\.8)
//       throttled      800.120.100 "Too many requests"
//     Pending, communication and system errors are outcome unknown (nothing
//     protects a resend; the lookup settles it). Everything else is a
//     rejection: validation codes (^(200\.[123]|100\.[53][07]|800\.900|
//     100\.[69]00\.500)) are refusals, the rest declines.
#include <regex>
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://eu-prod.oppwa.com";

AdapterInfo HyperPayInfo() {
  AdapterInfo info;
  info.name = "hyperpay";
  info.display_name = "HyperPay (OPPWA server-to-server)";
  info.placement = KeyPlacement::kNone;
  info.key_retention = std::chrono::seconds(0);
  info.retention_note = "no idempotency key";
  info.key_replays_all_answers = false;
  info.conflict = "none: a resend is a new payment";
  info.reference_field = "merchantTransactionId";
  info.reference_rules = {8, 255, KeyAlphabet::kPrintableAscii};
  info.has_lookup = true;
  // GET /v3/query reads the transaction report (OPPWA's "reporting" API),
  // whose freshness is not documented. Safer reading: up to an hour behind,
  // Stripe's documented bound for its search index during outages. HyperPay
  // takes no key, so within the window a "not found" never leads to a send.
  info.lookup_window = std::chrono::hours(1);
  info.reconciliation = "GET /v3/query?merchantTransactionId= (may list several)";
  info.sources = {"https://hyperpay.docs.oppwa.com/reference/parameters",
                  "https://hyperpay.docs.oppwa.com/reference/resultCodes",
                  "https://hyperpay.docs.oppwa.com/tutorials/reporting/transaction"};
  return info;
}

bool Matches(const std::string& code, const char* pattern) { return std::regex_search(code, std::regex(pattern)); }

// Reads one payment (a create answer or a query entry) by its result.code.
Classification PaymentResult(const nlohmann::json& payment) {
  const std::string code = Str(At(payment, {"result"}), "code");
  const std::string description = Str(At(payment, {"result"}), "description");
  const std::string id = Str(payment, "id");
  if (code.empty()) return Unknown("no_result", "no result.code");
  if (Matches(code, R"(^(000\.000\.|000\.100\.1|000\.[36]|000\.400\.[1][12]0))")) return Succeeded(id, code);
  if (Matches(code, R"(^(000\.400\.0[^3]|000\.400\.100))")) return Succeeded(id, code);
  if (code == "800.120.100") return RetryLater(code, description);
  if (Matches(code, R"(^(000\.200|800\.400\.5|100\.400\.500))")) return Unknown(code, "pending: " + description);
  if (Matches(code, R"(^(900\.[1234]00|000\.400\.030))")) return Unknown(code, description);
  if (Matches(code, R"(^(800\.[56]|999\.|600\.1|800\.800\.8))")) return Unknown(code, description);
  if (Matches(code, R"(^(200\.[123]|100\.[53][07]|800\.900|100\.[69]00\.500))")) return Refused(code, description);
  return Declined(code, description);
}

class HyperPayAdapter final : public ProviderAdapter {
 public:
  explicit HyperPayAdapter(HyperPayOptions o)
      : ProviderAdapter(WithLookupWindow(HyperPayInfo(), o.lookup_window), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::string> amount = Amount(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (options_.entity_id.empty()) return Status::InvalidArgument("hyperpay needs entity_id");
    if (intent.customer_or_source.empty()) {
      return Status::InvalidArgument("hyperpay needs customer_or_source (registration id)");
    }
    FormFields fields = {{"entityId", options_.entity_id},
                         {"amount", *amount},
                         {"currency", UpperCurrency(intent.currency)},
                         {"paymentType", "DB"},
                         {"merchantTransactionId", ReferenceFor(provider_key)},
                         {"standingInstruction.mode", "REPEATED"},
                         {"standingInstruction.type", "UNSCHEDULED"},
                         {"standingInstruction.source", "MIT"}};
    if (!intent.description.empty()) fields.emplace_back("descriptor", intent.description.substr(0, 127));
    if (!intent.reference.empty()) fields.emplace_back("customParameters[order_reference]", intent.reference);
    return Authorized(
        FormRequest("POST", "/v1/registrations/" + PercentEncode(intent.customer_or_source) + "/payments", fields));
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (!Str(At(json, {"result"}), "code").empty()) return PaymentResult(json);
    return HttpFallback(answer, /*keyed=*/false, "", "");
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view) const override {
    Result<std::string> amount = Amount(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    const FormFields fields = {{"entityId", options_.entity_id},
                               {"amount", *amount},
                               {"currency", UpperCurrency(refund.currency)},
                               {"paymentType", "RF"}};
    return Authorized(FormRequest("POST", "/v1/payments/" + PercentEncode(refund.payment_id), fields));
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override { return Classify(answer); }

  Result<ProviderRequest> BuildLookup(std::string_view reference) const override {
    if (options_.entity_id.empty()) return Status::InvalidArgument("hyperpay needs entity_id");
    return Authorized(GetRequest("/v3/query?entityId=" + PercentEncode(options_.entity_id) +
                                 "&merchantTransactionId=" + PercentEncode(reference)));
  }

  Lookup ParseLookup(const ProviderAnswer& answer) const override {
    if (answer.transport != ProviderAnswer::Transport::kAnswered) return {Lookup::Kind::kUnknown, {}, answer.error};
    const nlohmann::json json = ParseJson(answer.body);
    const std::string code = Str(At(json, {"result"}), "code");
    const nlohmann::json& payments = At(json, {"payments"});
    if (code == "700.400.580" || (payments.is_array() && payments.empty())) {
      return {Lookup::Kind::kNotFound, {}, "no transaction with this merchantTransactionId"};
    }
    if (!payments.is_array()) return {Lookup::Kind::kUnknown, {}, "query failed: " + code};
    return Settle(payments);
  }

 private:
  // Several payments may carry the reference: one paid settles it; one still
  // open or uncertain leaves it unknown; otherwise the last decline stands.
  static Lookup Settle(const nlohmann::json& payments) {
    int paid = 0;
    bool uncertain = false;
    Lookup paid_one, declined{Lookup::Kind::kNotFound, {}, "only failed attempts, none paid"};
    for (const auto& payment : payments) {
      const std::string type = Str(payment, "paymentType");
      if (!type.empty() && type != "DB" && type != "PA") continue;
      const Classification c = PaymentResult(payment);
      if (c.kind == Classification::Kind::kSucceeded) {
        if (paid++ == 0) paid_one = {Lookup::Kind::kFound, c, "paid"};
      } else if (c.kind != Classification::Kind::kTerminal) {
        uncertain = true;
      } else if (c.declined) {
        declined = {Lookup::Kind::kFound, c, "declined"};
      }
    }
    if (paid > 1) paid_one.message = "paid " + std::to_string(paid) + " times: refund the extra payments";
    if (paid > 0) return paid_one;
    if (uncertain) return {Lookup::Kind::kUnknown, {}, "a payment is pending or uncertain"};
    return declined;
  }

  static Result<std::string> Amount(std::int64_t minor, const std::string& currency) {
    const int exponent = CurrencyExponent(currency);
    return FormatDecimal(minor, currency, exponent > 2 ? 2 : exponent);
  }

  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    return r;
  }

  HyperPayOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewHyperPayAdapter(HyperPayOptions options) {
  return std::make_unique<internal::HyperPayAdapter>(std::move(options));
}

}  // namespace phasekey::phases
