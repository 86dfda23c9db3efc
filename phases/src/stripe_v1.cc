// Stripe API v1: the Charges API, or PaymentIntents created and confirmed in
// one call (StripeOptions::api).
//
// Facts (https://docs.stripe.com/api/idempotent_requests, /api/errors,
// /error-codes, /error-low-level, /currencies, /search):
//   - Idempotency-Key header on POST, up to 255 characters. Results are saved
//     once execution begins and replayed, 500s included; keys "can be removed
//     ... after they're at least 24 hours old": 24 h is a minimum, so we
//     assume exactly 24 h.
//   - A concurrent request with the same key: 409 idempotency_key_in_use
//     (not saved, retry). Other parameters under a used key:
//     idempotency_error (historically HTTP 400).
//   - Declines: 402 card_error with a decline_code.
//   - Charges are searchable by metadata (GET /v1/charges/search), but the
//     index lags ("under 1 minute", longer during outages). The lookup is
//     therefore only trusted as a reconciliation; a stale "not found" within
//     the key's retention leads to a resend under the same key, which Stripe
//     deduplicates.
//   - PaymentIntents (https://docs.stripe.com/api/payment_intents/create,
//     /payments/paymentintents/lifecycle): POST /v1/payment_intents with
//     confirm=true creates and confirms at once, under the same key rules.
//     Automatic payment methods without redirects
//     (automatic_payment_methods[allow_redirects]=never), since a server has
//     no page to redirect to. Statuses: succeeded (paid), processing (paid
//     later, like a pending charge), requires_action (the customer must
//     authenticate; a server-side flow cannot, so it is final: a decline),
//     requires_payment_method (the attempt failed; a decline answers 402
//     card_error carrying the intent in that status), canceled (final).
//     Searchable by metadata (GET /v1/payment_intents/search), with the same
//     lag. Refunds name the intent (payment_intent=pi_...).
//   - Lists (https://docs.stripe.com/api/charges/list,
//     /api/payment_intents/list, /api/pagination): GET /v1/charges (or
//     /v1/payment_intents) with created[gte]=<Unix seconds>, limit up to
//     100, newest first; has_more says whether another page follows, asked
//     for with starting_after=<the last id of this page>. Unlike search, a
//     list is not said to lag: it is what `phasekey keys reconcile` reads.
// Charges stay the default for older accounts; Stripe recommends
// PaymentIntents for new integrations.
#include <string>

#include "answer_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/money.h"
#include "stripe_common.h"

namespace phasekey::phases {
namespace internal {
namespace {

constexpr char kBaseUrl[] = "https://api.stripe.com";
constexpr char kReferenceMetadata[] = "metadata[phasekey_reference]";

bool Intents(const StripeOptions& o) { return o.api == StripeV1Api::kPaymentIntents; }

AdapterInfo StripeV1Info(const StripeOptions& o) {
  const std::chrono::seconds retention = o.key_retention;
  AdapterInfo info;
  info.name = "stripe_v1";
  info.display_name = Intents(o) ? "Stripe (API v1, PaymentIntents)" : "Stripe (API v1, Charges)";
  info.placement = KeyPlacement::kHeader;
  info.key_field = "Idempotency-Key";
  info.key_rules = {1, 255, KeyAlphabet::kPrintableAscii};
  info.key_retention = retention.count() > 0 ? retention : std::chrono::hours(24);
  info.retention_note = "pruned after at least 24 h; 24 h assumed";
  info.conflict = "409 idempotency_key_in_use: retry; other params: idempotency_error";
  info.reference_field = kReferenceMetadata;
  info.reference_rules = {1, 255, KeyAlphabet::kPrintableAscii};
  info.has_lookup = true;
  // Stripe's Search API "is not read-after-write consistent": "under normal
  // operating conditions, data is searchable in less than a minute", but
  // "propagation of new or updated data can be up to an hour behind during
  // outages" (docs.stripe.com/search). The outage bound is the window: a
  // search that finds nothing within an hour of the charge proves nothing
  // (within that hour the key, kept 24 h, makes a resend safe anyway).
  info.lookup_window = std::chrono::hours(1);
  info.reconciliation = Intents(o) ? "GET /v1/payment_intents/search by metadata (index lags ~1 min)"
                                   : "GET /v1/charges/search by metadata (index lags ~1 min)";
  info.has_list = true;
  info.listing = Intents(o) ? "GET /v1/payment_intents?created[gte]=T, newest first, starting_after"
                            : "GET /v1/charges?created[gte]=T, newest first, starting_after";
  info.sources = {"https://docs.stripe.com/api/idempotent_requests",
                  "https://docs.stripe.com/api/payment_intents/create",
                  "https://docs.stripe.com/payments/paymentintents/lifecycle",
                  "https://docs.stripe.com/api/errors",
                  "https://docs.stripe.com/error-codes",
                  "https://docs.stripe.com/error-low-level",
                  "https://docs.stripe.com/currencies",
                  "https://docs.stripe.com/search",
                  "https://docs.stripe.com/api/charges/list",
                  "https://docs.stripe.com/api/pagination"};
  return info;
}

bool IsSource(const std::string& id) {
  for (const char* prefix : {"tok_", "src_", "card_", "ba_"}) {
    if (id.starts_with(prefix)) return true;
  }
  return false;
}

bool IsPaymentMethod(const std::string& id) { return id.starts_with("pm_") || IsSource(id); }

// A charge object (from a create, or from a search hit).
Classification ChargeObject(const nlohmann::json& charge) {
  const std::string status = Str(charge, "status");
  if (status == "succeeded" || status == "pending") return Succeeded(Str(charge, "id"), status);
  if (status == "failed") return Declined(Str(charge, "failure_code"), Str(charge, "failure_message"));
  return Unknown("unexpected_status", "charge status '" + status + "'");
}

// A PaymentIntent object (from a create, or from a search hit).
Classification IntentObject(const nlohmann::json& intent) {
  const std::string status = Str(intent, "status");
  if (status == "succeeded" || status == "processing") return Succeeded(Str(intent, "id"), status);
  if (status == "requires_action") {
    return Declined("requires_action",
                    "the payment needs the customer's authentication, which a server-side flow "
                    "cannot give");
  }
  if (status == "requires_payment_method" || status == "canceled") {
    const nlohmann::json& error = At(intent, {"last_payment_error"});
    const std::string decline = Str(error, "decline_code");
    return Declined(decline.empty() ? status : decline, Str(error, "message"));
  }
  return Unknown("unexpected_status", "payment intent status '" + status + "'");
}

// An integer member of a list's object (amount, created); 0 when absent.
std::int64_t Integer(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json& value = At(object, {key});
  return value.is_number_integer() ? value.get<std::int64_t>() : 0;
}

// A charge or payment intent of a list, as a ProviderOperation.
ProviderOperation ListedOperation(const nlohmann::json& payment) {
  ProviderOperation op;
  op.id = Str(payment, "id");
  op.reference = Str(At(payment, {"metadata"}), "phasekey_reference");
  op.order_reference = Str(At(payment, {"metadata"}), "order_reference");
  op.amount = Integer(payment, "amount");
  op.currency = Str(payment, "currency");
  op.created = Integer(payment, "created");
  op.status = Str(payment, "status");
  return op;
}

class StripeV1Adapter final : public ProviderAdapter {
 public:
  explicit StripeV1Adapter(StripeOptions o)
      : ProviderAdapter(WithLookupWindow(StripeV1Info(o), o.lookup_window), o.base_url.empty() ? kBaseUrl : o.base_url),
        options_(std::move(o)) {}

  Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const override {
    Result<std::int64_t> amount = StripeAmount(intent.amount_minor, intent.currency);
    if (!amount) return amount.error();
    if (intent.customer_or_source.empty()) return Status::InvalidArgument("stripe_v1 needs customer_or_source");
    FormFields fields = {{"amount", std::to_string(*amount)}, {"currency", LowerCurrency(intent.currency)}};
    if (Intents(options_)) {
      AddIntentPayer(intent, &fields);
    } else {
      fields.emplace_back(IsSource(intent.customer_or_source) ? "source" : "customer", intent.customer_or_source);
    }
    if (!intent.description.empty()) fields.emplace_back("description", intent.description);
    fields.emplace_back(kReferenceMetadata, ReferenceFor(provider_key));
    if (!intent.reference.empty()) fields.emplace_back("metadata[order_reference]", intent.reference);
    return Keyed(FormRequest("POST", Intents(options_) ? "/v1/payment_intents" : "/v1/charges", fields), provider_key);
  }

  Classification Classify(const ProviderAnswer& answer) const override {
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.transport == ProviderAnswer::Transport::kAnswered && Is2xx(answer.status)) {
      if (!Intents(options_) && Str(json, "object") == "charge") return ChargeObject(json);
      if (Intents(options_) && Str(json, "object") == "payment_intent") return IntentObject(json);
    }
    return StripeError(answer, json);
  }

  Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const override {
    Result<std::int64_t> amount = StripeAmount(refund.amount_minor, refund.currency);
    if (!amount) return amount.error();
    const char* paid_by = refund.payment_id.starts_with("pi_") ? "payment_intent" : "charge";
    FormFields fields = {{paid_by, refund.payment_id}, {"amount", std::to_string(*amount)}};
    fields.emplace_back(kReferenceMetadata, ReferenceFor(provider_key));
    if (!refund.reason.empty()) fields.emplace_back("metadata[reason]", refund.reason);
    return Keyed(FormRequest("POST", "/v1/refunds", fields), provider_key);
  }

  Classification ClassifyRefund(const ProviderAnswer& answer) const override {
    const nlohmann::json json = ParseJson(answer.body);
    if (answer.transport == ProviderAnswer::Transport::kAnswered && Is2xx(answer.status) &&
        Str(json, "object") == "refund") {
      const std::string status = Str(json, "status");
      if (status == "failed" || status == "canceled") return Refused(Str(json, "failure_reason"), status);
      return Succeeded(Str(json, "id"), status);
    }
    return StripeError(answer, json);
  }

  Result<ProviderRequest> BuildLookup(std::string_view reference) const override {
    std::string quoted;
    for (char c : reference) {
      if (c == '\'' || c == '\\') quoted.push_back('\\');
      quoted.push_back(c);
    }
    const std::string query = "metadata['phasekey_reference']:'" + quoted + "'";
    const char* search = Intents(options_) ? "/v1/payment_intents/search" : "/v1/charges/search";
    return Authorized(GetRequest(search + std::string("?query=") + PercentEncode(query)));
  }

  Lookup ParseLookup(const ProviderAnswer& answer) const override {
    Lookup l;
    const nlohmann::json json = ParseJson(answer.body);
    const nlohmann::json& data = At(json, {"data"});
    if (answer.transport != ProviderAnswer::Transport::kAnswered || answer.status != 200 || !data.is_array()) {
      l.message = "search failed: " + (answer.error.empty() ? "HTTP " + std::to_string(answer.status) : answer.error);
      return l;
    }
    for (const auto& payment : data) {
      Classification c = Intents(options_) ? IntentObject(payment) : ChargeObject(payment);
      if (c.kind == Classification::Kind::kSucceeded) return {Lookup::Kind::kFound, c, "paid"};
      if (c.kind == Classification::Kind::kTerminal) l.payment = c;
    }
    if (l.payment.kind == Classification::Kind::kTerminal) return {Lookup::Kind::kFound, l.payment, "declined"};
    if (!data.empty()) return {Lookup::Kind::kUnknown, {}, "payments in an unexpected state"};
    return {Lookup::Kind::kNotFound, {}, "no payment with this reference"};
  }

  Result<ProviderRequest> BuildList(std::chrono::system_clock::time_point created_after,
                                    std::string_view cursor) const override {
    const auto since = std::chrono::duration_cast<std::chrono::seconds>(created_after.time_since_epoch()).count();
    std::string path = Intents(options_) ? "/v1/payment_intents" : "/v1/charges";
    path += "?" + FormEncode({{"created[gte]", std::to_string(since)}, {"limit", "100"}});
    if (!cursor.empty()) path += "&" + FormEncode({{"starting_after", std::string(cursor)}});
    return Authorized(GetRequest(path));
  }

  Result<OperationPage> ParseList(const ProviderAnswer& answer) const override {
    const nlohmann::json json = ParseJson(answer.body);
    const nlohmann::json& data = At(json, {"data"});
    if (answer.transport != ProviderAnswer::Transport::kAnswered || answer.status != 200 || !data.is_array()) {
      return Status::Retryable("list failed: " +
                               (answer.error.empty() ? "HTTP " + std::to_string(answer.status) : answer.error));
    }
    OperationPage page;
    for (const auto& payment : data) {
      page.operations.push_back(ListedOperation(payment));
      if (page.operations.back().id.empty()) return Status::Retryable("list failed: an object without an id");
    }
    const nlohmann::json& more = At(json, {"has_more"});
    if (more.is_boolean() && more.get<bool>()) {
      if (page.operations.empty()) return Status::Retryable("list failed: has_more on an empty page");
      page.next_cursor = page.operations.back().id;
    }
    return page;
  }

 private:
  // A PaymentIntent's payer: a payment method or source alone, or a customer
  // with, optionally, the payment method in source_detail; confirmed at once,
  // without redirects.
  static void AddIntentPayer(const PaymentIntent& intent, FormFields* fields) {
    if (IsPaymentMethod(intent.customer_or_source)) {
      fields->emplace_back("payment_method", intent.customer_or_source);
    } else {
      fields->emplace_back("customer", intent.customer_or_source);
      if (!intent.source_detail.empty()) fields->emplace_back("payment_method", intent.source_detail);
    }
    fields->emplace_back("confirm", "true");
    fields->emplace_back("automatic_payment_methods[enabled]", "true");
    fields->emplace_back("automatic_payment_methods[allow_redirects]", "never");
  }

  ProviderRequest Authorized(ProviderRequest r) const {
    if (!options_.secret.empty()) r.headers.emplace_back("Authorization", "Bearer " + options_.secret);
    if (!options_.stripe_version.empty()) r.headers.emplace_back("Stripe-Version", options_.stripe_version);
    return r;
  }
  ProviderRequest Keyed(ProviderRequest r, std::string_view provider_key) const {
    r = Authorized(std::move(r));
    r.headers.emplace_back("Idempotency-Key", FitKey(provider_key));
    return r;
  }

  StripeOptions options_;
};

}  // namespace
}  // namespace internal

std::unique_ptr<ProviderAdapter> NewStripeV1Adapter(StripeOptions options) {
  return std::make_unique<internal::StripeV1Adapter>(std::move(options));
}

}  // namespace phasekey::phases
