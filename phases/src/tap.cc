// Tap Payments Charges API.
//
// Facts (https://developers.tap.company/docs/idempotency,
// https://developers.tap.company/reference/create-a-charge,
// https://developers.tap.company/docs/charges-1):
//   - The idempotent string goes in the body, reference.idempotent, on
//     Authorize, Charges and Refunds; a request with the same string within
//     24 hours returns the original response and creates nothing new.
//   - No length or alphabet is documented for it. Safer reading: at most 64
//     characters of [A-Za-z0-9_-] (the shape of their examples), fitted.
//   - amount is a decimal number in major units (1 = 1 KWD); currencies with
//     three decimals (KWD, BHD, OMR) keep them.
//   - Charge status CAPTURED (or AUTHORIZED): paid. DECLINED, RESTRICTED: a
//     decline. INITIATED/IN_PROGRESS: the customer must complete a redirect,
//     which an off-session charge cannot do (refused). FAILED, CANCELLED,
//     ABANDONED, VOID, TIMEDOUT: refused. UNKNOWN: outcome unknown.
//   - The list endpoint filters by date, status, customer and charge id, not
//     by our reference: no lookup.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://api.tap.company";

AdapterInfo TapInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "tap";
  info.display_name = "Tap Payments (Charges API v2)";
  info.placement = KeyPlacement::kBodyField;
  info.key_field = "reference.idempotent";
  info.key_rules = {1, 64, KeyAlphabet::kUrlSafe};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24);
  info.retention_note = "24 h";
  info.conflict = "same string within 24 h returns the original response";
  info.reference_field = "reference.transaction";
  info.reference_rules = {1, 64, KeyAlphabet::kUrlSafe};
  info.has_lookup = false;
  info.reconciliation = "none (list cannot filter by reference)";
  info.sources = {"https://developers.tap.company/docs/idempotency",
                  "https://developers.tap.company/reference/create-a-charge",
                  "https://developers.tap.company/docs/charges-1"};
  return info;
}

Classification ChargeObject(const nlohmann::json& charge) {
  const std::string status = Str(charge, "status");
  const std::string id = Str(charge, "id");
  const std::string message = Str(At(charge, {"response"}), "message");
  const std::string code = Str(At(charge, {"response"}), "code");
  if (status == "CAPTURED" || status == "AUTHORIZED") return Succeeded(id, status);
  if (status == "DECLINED" || status == "RESTRICTED") return Declined(code.empty() ? status : code, message);
  if (status == "INITIATED" || status == "IN_PROGRESS") {
    return Refused(status, "the customer must complete a redirect; not possible off-session");
  }
  if (status == "UNKNOWN" || status.empty()) return Unknown(status.empty() ? "unexpected_answer" : status, message);
  return Refused(status, message);
}

class TapAdapter final : public ProviderAdapter {
 public:
  explicit TapAdapter(TapOptions o)
      : ProviderAdapter(TapInfo(o.key_retention), o.base_url.empty() ? kBaseUrl : o.base_url), options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::string> amount = FormatMajor(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (options_.redirect_url.empty()) return Status::InvalidArgument("tap needs redirect_url");
    if (intent.customer_or_source.empty() || intent.source_detail.empty()) {
      return Status::InvalidArgument("tap needs customer_or_source (source id) and source_detail (customer id)");
    }
    const std::string reference = ReferenceFor(provider_key);
    const nlohmann::json body = {{"amount", DecimalNumber(*amount)},
                                 {"currency", UpperCurrency(intent.currency)},
                                 {"customer_initiated", false},
                                 {"save_card", false},
                                 {"description", intent.description},
                                 {"reference",
                                  {{"transaction", reference},
                                   {"order", intent.reference.empty() ? reference : intent.reference},
                                   {"idempotent", FitKey(provider_key)}}},
                                 {"customer", {{"id", intent.source_detail}}},
                                 {"source", {{"id", intent.customer_or_source}}},
                                 {"redirect", {{"url", options_.redirect_url}}}};
    return Authorized(JsonRequest("POST", "/v2/charges", body));
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && Str(json, "object") == "charge") return ChargeObject(json);
    return Errors(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<std::string> amount = FormatMajor(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    const nlohmann::json body = {
        {"charge_id", refund.payment_id},
        {"amount", DecimalNumber(*amount)},
        {"currency", UpperCurrency(refund.currency)},
        {"reason", refund.reason.empty() ? "requested_by_customer" : refund.reason},
        {"reference", {{"merchant", ReferenceFor(provider_key)}, {"idempotent", FitKey(provider_key)}}}};
    return Authorized(JsonRequest("POST", "/v2/refunds", body));
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && Str(json, "object") == "refund") {
      const std::string status = Str(json, "status");
      if (status == "DECLINED" || status == "FAILED" || status == "RESTRICTED") return Refused(status, "refund failed");
      return Succeeded(Str(json, "id"), status);
    }
    return Errors(answer, json);
  }

 private:
  static Classification Errors(const ProviderAnswer& answer, const nlohmann::json& json) {
    const nlohmann::json& errors = At(json, {"errors"});
    const nlohmann::json first = errors.is_array() && !errors.empty() ? errors[0] : nlohmann::json::object();
    return HttpFallback(answer, /*keyed=*/true, Str(first, "code"), Str(first, "description"));
  }

  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    return r;
  }

  TapOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewTapAdapter(TapOptions options) {
  return std::make_unique<internal::TapAdapter>(std::move(options));
}

}  // namespace phasekey::phases
