// PayTabs PT2 API, recurring sale with a saved token.
//
// Facts (PayTabs PT2 manuals: payment request, query transaction, profile_id;
// URLs in PayTabsInfo().sources and docs/providers.md):
//   - No idempotency key. cart_id (1..64) is the merchant's reference;
//     POST /payment/query accepts profile_id with either tran_ref or cart_id.
//   - A third-party catalogue (api-evangelist) reports a ~2 minute duplicate
//     window answered with response code 4; PayTabs does not document it.
//     Safer reading: no deduplication is relied on; an E answer with code 4
//     is outcome unknown and the lookup settles it.
//   - The server key goes raw in the `authorization` header; hosts are
//     per region (secure.paytabs.sa for Saudi Arabia, the default here).
//   - cart_amount is a number in major units with the currency's decimals.
//   - payment_result.response_status: A authorised (paid), H hold (paid,
//     held for review), P pending (outcome unknown), D declined, E error,
//     V voided, X expired.
//   - A query by cart_id may list several transactions.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://secure.paytabs.sa";

AdapterInfo PayTabsInfo() {
  AdapterInfo info;
  info.name = "paytabs";
  info.display_name = "PayTabs (PT2 API)";
  info.placement = KeyPlacement::kNone;
  info.key_retention = std::chrono::seconds(0);
  info.retention_note = "no idempotency key";
  info.key_replays_all_answers = false;
  info.conflict = "none documented (3rd party: ~2 min duplicate window, code 4)";
  info.reference_field = "cart_id";
  info.reference_rules = {1, 64, KeyAlphabet::kReferenceSafe};
  info.has_lookup = true;
  // POST /payment/query by cart_id: PayTabs does not say how soon a new
  // transaction is found by its cart_id. Safer reading: up to an hour
  // behind, as Stripe's search during outages. PayTabs takes no key, so
  // within the window a "not found" never leads to a send.
  info.lookup_window = std::chrono::hours(1);
  info.reconciliation = "POST /payment/query {profile_id, cart_id}";
  info.sources = {
      "https://docs.paytabs.com/PT2-API-Endpoints/Integration-Types-Manuals/Own-Form/"
      "Own-Form-Step-7-Manage-Transactions/Own-Form-Step-7-Query-Transaction",
      "https://support.paytabs.com/en/support/solutions/articles/60000806381-7-1-pt2-api-endpoints-query-transaction",
      "https://docs.paytabs.com/PT2-API-Endpoints/Integration-Types-Manuals/Request-Response-Parameters/"
      "Request-Response-Profile-Id"};
  return info;
}

Classification TransactionResult(const nlohmann::json& transaction) {
  const nlohmann::json& result = At(transaction, {"payment_result"});
  const std::string status = Str(result, "response_status");
  const std::string code = Str(result, "response_code");
  const std::string message = Str(result, "response_message");
  const std::string ref = Str(transaction, "tran_ref");
  if (status == "A" || status == "H") return Succeeded(ref, status);
  if (status == "P") return Unknown(status, "pending: " + message);
  if (status == "D") return Declined(code.empty() ? status : code, message);
  if (status == "E" && code == "4") return Unknown(code, "reported as a duplicate: " + message);
  if (status == "E" || status == "V" || status == "X")
    return Refused(status + (code.empty() ? "" : "/" + code), message);
  return Unknown("unexpected_status", "response_status '" + status + "'");
}

class PayTabsAdapter final : public ProviderAdapter {
 public:
  explicit PayTabsAdapter(PayTabsOptions o)
      : ProviderAdapter(WithLookupWindow(PayTabsInfo(), o.lookup_window), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<nlohmann::json> profile = Profile();
    if (!profile) return profile.error();
    Result<std::string> amount = FormatMajor(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (intent.customer_or_source.empty() || intent.source_detail.empty()) {
      return Status::InvalidArgument("paytabs needs customer_or_source (token) and source_detail (tran_ref)");
    }
    const nlohmann::json body = {{"profile_id", *profile},
                                 {"tran_type", "sale"},
                                 {"tran_class", "recurring"},
                                 {"cart_id", ReferenceFor(provider_key)},
                                 {"cart_currency", UpperCurrency(intent.currency)},
                                 {"cart_amount", DecimalNumber(*amount)},
                                 {"cart_description", intent.description.empty() ? "payment" : intent.description},
                                 {"token", intent.customer_or_source},
                                 {"tran_ref", intent.source_detail}};
    return Authorized(JsonRequest("POST", "/payment/request", body));
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    if (auto failed = TransportFailure(answer)) return *failed;
    const nlohmann::json json = ParseJson(answer.body);
    if (Is2xx(answer.status) && At(json, {"payment_result"}).is_object()) return TransactionResult(json);
    return HttpFallback(answer, /*keyed=*/false, Str(json, "code"), Str(json, "message"));
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<nlohmann::json> profile = Profile();
    if (!profile) return profile.error();
    Result<std::string> amount = FormatMajor(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    const nlohmann::json body = {{"profile_id", *profile},
                                 {"tran_type", "refund"},
                                 {"tran_class", "ecom"},
                                 {"cart_id", ReferenceFor(provider_key)},
                                 {"cart_currency", UpperCurrency(refund.currency)},
                                 {"cart_amount", DecimalNumber(*amount)},
                                 {"cart_description", refund.reason.empty() ? "refund" : refund.reason},
                                 {"tran_ref", refund.payment_id}};
    return Authorized(JsonRequest("POST", "/payment/request", body));
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override { return Classify(answer); }

  Result<ProviderRequest> BuildLookup(std::string_view reference) const override {
    Result<nlohmann::json> profile = Profile();
    if (!profile) return profile.error();
    return Authorized(JsonRequest("POST", "/payment/query", {{"profile_id", *profile}, {"cart_id", reference}}));
  }

  Lookup ParseLookup(const ProviderAnswer& answer) const override {
    if (answer.transport != ProviderAnswer::Transport::kAnswered || !Is2xx(answer.status)) {
      return {Lookup::Kind::kUnknown, {}, "query failed: " + std::to_string(answer.status) + " " + answer.error};
    }
    nlohmann::json json = ParseJson(answer.body);
    if (json.is_object() && At(json, {"payment_result"}).is_object()) json = nlohmann::json::array({json});
    if (!json.is_array()) return {Lookup::Kind::kUnknown, {}, "unexpected query answer"};
    bool uncertain = false;
    Lookup declined{Lookup::Kind::kNotFound, {}, "no paid transaction with this cart_id"};
    for (const auto& transaction : json) {
      const Classification c = TransactionResult(transaction);
      if (c.kind == Classification::Kind::kSucceeded) return {Lookup::Kind::kFound, c, "paid"};
      if (c.kind != Classification::Kind::kTerminal) uncertain = true;
      if (c.declined) declined = {Lookup::Kind::kFound, c, "declined"};
    }
    if (uncertain) return {Lookup::Kind::kUnknown, {}, "a transaction is pending or uncertain"};
    return declined;
  }

 private:
  Result<nlohmann::json> Profile() const {
    const std::string& id = options_.profile_id;
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos || id.size() > 15) {
      return Status::InvalidArgument("paytabs needs a numeric profile_id");
    }
    return nlohmann::json(std::stoll(id));
  }

  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("authorization", options_.secret);
    return r;
  }

  PayTabsOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewPayTabsAdapter(PayTabsOptions options) {
  return std::make_unique<internal::PayTabsAdapter>(std::move(options));
}

}  // namespace phasekey::phases
