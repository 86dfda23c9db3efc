// Amazon Payment Services (formerly PayFort), recurring PURCHASE with a
// stored token.
//
// Facts (https://paymentservices.amazon.com/docs/api/managing-payments/recurring,
// https://paymentservices.amazon.com/docs/developer-resources/signature,
// https://paymentservices.amazon.com/docs/managing-payments/tracking-a-payment/check-transaction-status,
// https://docs.payfort.com/docs/in-common/build/index.html):
//   - No idempotency key. merchant_reference (at most 40 of [A-Za-z0-9._-])
//     must be unique per merchant; reusing it answers message 066 "Merchant
//     reference already exists" (so the first attempt exists: outcome
//     unknown, the lookup settles it).
//   - JSON POST to /FortAPI/paymentApi; every request carries `signature`:
//     SHA-256 hex of request phrase + the parameters sorted by name as
//     name=value + request phrase.
//   - amount is an integer in minor units (x100 AED, x1000 KWD).
//   - Answers carry a two-digit status: 14 purchase success; 13 purchase
//     failure (a decline); 20 on hold and 40 in review (the payment exists);
//     15 uncertain and 19 pending (outcome unknown); 00 invalid request.
//     response_code is the status followed by a three-digit message code.
//   - CHECK_STATUS by merchant_reference answers status 12 with
//     transaction_status (the original status). What it answers for an
//     unknown reference is not documented: we read a status 11/00 answer as
//     "not found" only when its message says the transaction or order does
//     not exist, and as unknown otherwise (never charging on a doubt).
//   - Response signatures are not verified here (TLS protects the channel).
#include <cctype>
#include <map>
#include <string>

#include "answer_util.h"
#include "key_hashing.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://paymentservices.payfort.com";
constexpr char kPath[] = "/FortAPI/paymentApi";

AdapterInfo ApsInfo() {
  AdapterInfo info;
  info.name = "amazon_payment_services";
  info.display_name = "Amazon Payment Services (PayFort)";
  info.placement = KeyPlacement::kNone;
  info.key_retention = std::chrono::seconds(0);
  info.retention_note = "no idempotency key";
  info.key_replays_all_answers = false;
  info.conflict = "reused merchant_reference: message 066 (already exists)";
  info.reference_field = "merchant_reference";
  info.reference_rules = {1, 40, KeyAlphabet::kReferenceSafe};
  info.has_lookup = true;
  // CHECK_STATUS by merchant_reference: Amazon Payment Services does not say
  // how soon a new operation is found. Safer reading: up to an hour behind,
  // as Stripe's search during outages. APS takes no key, so within the
  // window a "not found" never leads to a send.
  info.lookup_window = std::chrono::hours(1);
  info.reconciliation = "CHECK_STATUS by merchant_reference";
  info.sources = {"https://paymentservices.amazon.com/docs/api/managing-payments/recurring",
                  "https://paymentservices.amazon.com/docs/developer-resources/signature",
                  "https://paymentservices.amazon.com/docs/managing-payments/tracking-a-payment/"
                  "check-transaction-status",
                  "https://docs.payfort.com/docs/in-common/build/index.html"};
  return info;
}

bool MessageSaysMissing(std::string message) {
  for (char& c : message) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return message.find("not exist") != std::string::npos || message.find("not found") != std::string::npos;
}

// Reads a purchase status (of an answer, or of CHECK_STATUS's transaction_status).
Classification PurchaseStatus(const std::string& status, const nlohmann::json& json) {
  const std::string code = Str(json, "response_code");
  const std::string message = Str(json, "response_message");
  if (status == "14" || status == "20" || status == "40") return Succeeded(Str(json, "fort_id"), status);
  if (status == "15" || status == "19") return Unknown(code.empty() ? status : code, message);
  if (code.size() == 5 && code.substr(2) == "066") return Unknown(code, "merchant_reference already used: " + message);
  if (status == "13") return Declined(code.empty() ? status : code, message);
  if (status == "00") return Refused(code.empty() ? status : code, message);
  return Unknown(status.empty() ? "unexpected_answer" : status, message);
}

class ApsAdapter final : public ProviderAdapter {
 public:
  explicit ApsAdapter(AmazonPaymentServicesOptions o)
      : ProviderAdapter(WithLookupWindow(ApsInfo(), o.lookup_window), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::int64_t> amount = RescaleMinor(intent.amount_minor, intent.currency, CurrencyExponent(intent.currency));
    if (!amount) return amount.error();
    if (intent.customer_or_source.empty() || intent.customer_email.empty()) {
      return Status::InvalidArgument(
          "amazon_payment_services needs customer_or_source (token_name) and "
          "customer_email");
    }
    std::map<std::string, std::string> params = {{"command", "PURCHASE"},
                                                 {"merchant_reference", ReferenceFor(provider_key)},
                                                 {"amount", std::to_string(*amount)},
                                                 {"currency", UpperCurrency(intent.currency)},
                                                 {"customer_email", intent.customer_email},
                                                 {"token_name", intent.customer_or_source},
                                                 {"eci", "RECURRING"}};
    if (!intent.source_detail.empty()) params["agreement_id"] = intent.source_detail;
    if (!intent.description.empty()) params["order_description"] = intent.description.substr(0, 150);
    return SignedRequest(std::move(params));
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && !Str(json, "status").empty()) return PurchaseStatus(Str(json, "status"), json);
    return HttpFallback(answer, /*keyed=*/false, "", "");
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view) const override {
    Result<std::int64_t> amount = RescaleMinor(refund.amount_minor, refund.currency, CurrencyExponent(refund.currency));
    if (!amount) return amount.error();
    std::map<std::string, std::string> params = {{"command", "REFUND"},
                                                 {"fort_id", refund.payment_id},
                                                 {"amount", std::to_string(*amount)},
                                                 {"currency", UpperCurrency(refund.currency)}};
    if (!refund.reason.empty()) params["order_description"] = refund.reason.substr(0, 150);
    return SignedRequest(std::move(params));
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    const std::string status = Str(json, "status");
    if (status == "06") return Succeeded(Str(json, "fort_id"), status);
    if (status == "07") return Refused(Str(json, "response_code"), Str(json, "response_message"));
    return HttpFallback(answer, /*keyed=*/false, Str(json, "response_code"), Str(json, "response_message"));
  }

  Result<ProviderRequest> BuildLookup(std::string_view reference) const override {
    return SignedRequest({{"query_command", "CHECK_STATUS"}, {"merchant_reference", std::string(reference)}});
  }

  Lookup ParseLookup(const ProviderAnswer& answer) const override {
    if (answer.transport != ProviderAnswer::Transport::kAnswered || !Is2xx(answer.status)) {
      return {Lookup::Kind::kUnknown, {}, "CHECK_STATUS failed: " + std::to_string(answer.status) + " " + answer.error};
    }
    const nlohmann::json json = ParseJson(answer.body);
    const std::string status = Str(json, "status");
    const std::string message = Str(json, "response_message");
    if (status == "12") {
      const Classification c = PurchaseStatus(Str(json, "transaction_status"), json);
      if (c.kind == Classification::Kind::kSucceeded || c.kind == Classification::Kind::kTerminal) {
        return {Lookup::Kind::kFound, c, message};
      }
      return {Lookup::Kind::kUnknown, {}, "transaction pending or uncertain: " + c.code};
    }
    if ((status == "11" || status == "00") && MessageSaysMissing(message)) {
      return {Lookup::Kind::kNotFound, {}, message};
    }
    return {Lookup::Kind::kUnknown, {}, "CHECK_STATUS status " + status + ": " + message};
  }

 private:
  Result<ProviderRequest> SignedRequest(std::map<std::string, std::string> params) const {
    if (options_.merchant_identifier.empty() || options_.access_code.empty() || options_.sha_request_phrase.empty()) {
      return Status::InvalidArgument(
          "amazon_payment_services needs merchant_identifier, access_code and sha_request_phrase");
    }
    params["access_code"] = options_.access_code;
    params["merchant_identifier"] = options_.merchant_identifier;
    params["language"] = options_.language;
    std::string signed_text = options_.sha_request_phrase;
    for (const auto& [name, value] : params) signed_text += name + "=" + value;  // std::map: sorted by name
    signed_text += options_.sha_request_phrase;
    nlohmann::json body(params);
    body["signature"] = Sha256Hex(signed_text);
    return JsonRequest("POST", kPath, body);
  }

  AmazonPaymentServicesOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewAmazonPaymentServicesAdapter(AmazonPaymentServicesOptions options) {
  return std::make_unique<internal::ApsAdapter>(std::move(options));
}

}  // namespace phasekey::phases
