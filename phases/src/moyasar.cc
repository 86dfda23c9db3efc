// Moyasar Payments API.
//
// Facts (https://docs.moyasar.com/api/idempotency, https://docs.moyasar.com/token-payment,
// https://docs.moyasar.com/api/errors):
//   - Idempotency is the body field given_id, "a value of a uuid", which
//     becomes the payment's id. We send a name-based UUID (version 5) of the
//     provider key, so a retry carries the same given_id and the payment can
//     be fetched by it: GET /v1/payments/{given_id} is an exact lookup.
//   - What a second create with a used given_id answers is not documented,
//     nor how long given_ids are remembered. Safer readings: retention is the
//     engine's 24 h (configurable), and a 400 that names given_id is outcome
//     unknown, settled by the lookup on the next run.
//   - amount is an integer in the smallest unit; callback_url is required.
//   - A valid request that fails (a declined card) is 201 with status
//     "failed" and source.message. 5xx "doesn't tell what happened": outcome
//     unknown (the lookup settles it).
//   - Status paid, authorized or captured: paid. initiated: 3-D Secure is
//     waiting for the customer, impossible off-session (refused).

#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://api.moyasar.com";

AdapterInfo MoyasarInfo(std::chrono::seconds retention) {
  AdapterInfo info;
  info.name = "moyasar";
  info.display_name = "Moyasar (Payments API v1)";
  info.placement = KeyPlacement::kBodyField;
  info.key_field = "given_id";
  info.key_rules = {36, 36, KeyAlphabet::kUuid};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24);
  info.retention_documented = false;
  info.retention_note = "not documented; 24 h assumed, configurable";
  info.key_replays_all_answers = false;  // what a reused given_id answers is undocumented
  info.conflict = "not documented; a 400 naming given_id is treated as unknown";
  info.reference_field = "given_id";
  info.reference_rules = {36, 36, KeyAlphabet::kUuid};
  info.has_lookup = true;
  // GET /v1/payments/{given_id} retrieves the payment by its own id (the
  // given_id becomes the payment's id), not through a search index: a
  // retrieve sees a payment once it exists (read-after-write), so no window.
  info.lookup_window = std::chrono::milliseconds(0);
  info.reconciliation = "GET /v1/payments/{given_id} (exact)";
  info.sources = {"https://docs.moyasar.com/api/idempotency", "https://docs.moyasar.com/token-payment",
                  "https://docs.moyasar.com/api/errors"};
  return info;
}

Classification PaymentObject(const nlohmann::json& payment) {
  const std::string status = Str(payment, "status");
  const std::string message = Str(At(payment, {"source"}), "message");
  if (status == "paid" || status == "authorized" || status == "captured") return Succeeded(Str(payment, "id"), status);
  if (status == "failed") return Declined(status, message);
  if (status == "initiated") return Refused(status, "3-D Secure awaits the customer; not possible off-session");
  return Unknown("unexpected_status", "payment status '" + status + "'");
}

class MoyasarAdapter final : public ProviderAdapter {
 public:
  explicit MoyasarAdapter(MoyasarOptions o)
      : ProviderAdapter(WithLookupWindow(MoyasarInfo(o.key_retention), o.lookup_window),
                        o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::int64_t> amount = RescaleMinor(intent.amount_minor, intent.currency, CurrencyExponent(intent.currency));
    if (!amount) return amount.error();
    if (options_.callback_url.empty()) return Status::InvalidArgument("moyasar needs callback_url");
    if (intent.customer_or_source.empty()) return Status::InvalidArgument("moyasar needs customer_or_source (token)");
    nlohmann::json metadata = {{"phasekey_provider_key", std::string(provider_key)}};
    if (!intent.reference.empty()) metadata["order_reference"] = intent.reference;
    const nlohmann::json body = {{"given_id", FitKey(provider_key)},
                                 {"amount", *amount},
                                 {"currency", UpperCurrency(intent.currency)},
                                 {"description", intent.description},
                                 {"callback_url", options_.callback_url},
                                 {"source", {{"type", "token"}, {"token", intent.customer_or_source}}},
                                 {"metadata", metadata}};
    return Authorized(JsonRequest("POST", "/v1/payments", body));
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && !Str(json, "id").empty()) return PaymentObject(json);
    const std::string type = Str(json, "type");
    const std::string message = Str(json, "message");
    if (answer.status == 400 && (answer.body.find("given_id") != std::string::npos)) {
      return Unknown("given_id", "given_id refused, perhaps already used: " + answer.body.substr(0, 200));
    }
    return HttpFallback(answer, /*keyed=*/false, type, message);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view) const override {
    Result<std::int64_t> amount = RescaleMinor(refund.amount_minor, refund.currency, CurrencyExponent(refund.currency));
    if (!amount) return amount.error();
    return Authorized(
        JsonRequest("POST", "/v1/payments/" + PercentEncode(refund.payment_id) + "/refund", {{"amount", *amount}}));
  }

  Result<ProviderRequest> BuildLookup(std::string_view reference) const override {
    return Authorized(GetRequest("/v1/payments/" + PercentEncode(reference)));
  }

  Lookup ParseLookup(const ProviderAnswer& answer) const override {
    if (answer.transport == ProviderAnswer::Transport::kAnswered && answer.status == 404) {
      return {Lookup::Kind::kNotFound, {}, "no payment with this given_id"};
    }
    if (answer.transport != ProviderAnswer::Transport::kAnswered || answer.status != 200) {
      return {Lookup::Kind::kUnknown, {}, "fetch failed: " + std::to_string(answer.status) + " " + answer.error};
    }
    const Classification c = PaymentObject(ParseJson(answer.body));
    if (c.kind == Classification::Kind::kSucceeded || c.kind == Classification::Kind::kTerminal) {
      return {Lookup::Kind::kFound, c, c.status.empty() ? c.code : c.status};
    }
    return {Lookup::Kind::kUnknown, {}, c.message};
  }

 private:
  // HTTP Basic with the secret key as the user name and no password.
  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Basic " + Base64(options_.secret + ":"));
    return r;
  }

  MoyasarOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewMoyasarAdapter(MoyasarOptions options) {
  return std::make_unique<internal::MoyasarAdapter>(std::move(options));
}

}  // namespace phasekey::phases
