// The Stripe dialect: the Charges API of Stripe's API v1, as gateway.h
// describes it (POST /v1/charges, form-encoded, Idempotency-Key header, 409
// idempotency_key_in_use, 400 idempotency_error for other parameters, 402
// card_error for customer 13), and its two lookups: GET /v1/charges/search
// by one metadata clause, and GET /v1/charges/{id}. Lookups read the ledger's
// charges, which outlive their idempotency keys.
//
// PaymentIntents, created and confirmed in one call (POST /v1/payment_intents
// with confirm=true, charge_request.h), under the same key rules and faults,
// in one key space with charges (a key reused across the two is a reuse with
// other parameters):
//   200  the payment intent, status "succeeded" (a payment "pi_...", in the
//        ledger like a charge)
//   200  status "requires_action" with next_action, for customer 14 (who must
//        authenticate; nothing paid, not in the ledger)
//   402  card_error/card_declined, decline_code generic_decline, with the
//        intent in status "requires_payment_method", for customer 13
//   200 and 402 are stored under the key and replayed like a charge's.
// GET /v1/payment_intents/search by one metadata clause, like the charge
// search, lists the paid intents (unpaid ones are not kept), and GET
// /v1/payment_intents/{id} retrieves one as Stripe does (404
// resource_missing for any other id). Charges and intents never appear in
// each other's search or retrieve. Searches see a payment only
// GatewayOptions::lookup_lag after it was made; retrieves at once. Every
// lookup fails with a 500 api_error at Faults::lookup_fail_rate.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"
#include "fake_gateway/form.h"
#include "fake_gateway/stripe_json.h"
#include "fake_gateway/stripe_list.h"
#include "fake_gateway/stripe_search.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 255;  // Stripe: "up to 255 characters long"
constexpr char kDeclineMessage[] = "Your card was declined.";
constexpr std::string_view kChargesPath = "/v1/charges";
constexpr std::string_view kSearchPath = "/v1/charges/search";
constexpr std::string_view kRefundsPath = "/v1/refunds";
constexpr std::string_view kIntentsPath = "/v1/payment_intents";
constexpr std::string_view kIntentSearchPath = "/v1/payment_intents/search";
constexpr char kIntentPrefix[] = "pi_";

bool IsIntent(const ChargeRecord& payment) { return payment.id.starts_with(kIntentPrefix); }
bool IsIntent(const ParsedCharge& charge) { return charge.id_prefix == kIntentPrefix; }
constexpr int kDefaultSearchLimit = 10;  // Stripe's search: default 10, at most 100
constexpr int kMaxSearchLimit = 100;

GatewayResponse ErrorResponse(int status, std::string_view type, std::string_view code, std::string_view param,
                              std::string_view message) {
  return JsonResponse(status, ErrorJson(type, code, param, message));
}

GatewayResponse InvalidRequest(std::string_view code, std::string_view param, std::string_view message) {
  return ErrorResponse(400, "invalid_request_error", code, param, message);
}

GatewayResponse NotAllowed(const DialectRequest& request, std::string_view allowed) {
  GatewayResponse response =
      InvalidRequest("", "", fmt::format("{} {} is not supported; use {}.", request.method, request.path, allowed));
  response.status = 405;
  response.headers.emplace_back("Allow", allowed);
  return response;
}

// The `limit` of a search: 1..100, kDefaultSearchLimit when absent; nullopt
// when malformed.
std::optional<int> SearchLimit(std::string_view query) {
  const std::optional<std::string> text = QueryParam(query, "limit");
  if (!text) return kDefaultSearchLimit;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text->empty() || text->size() > 3 || !std::all_of(text->begin(), text->end(), digit)) return std::nullopt;
  const int limit = std::stoi(*text);
  if (limit < 1 || limit > kMaxSearchLimit) return std::nullopt;
  return limit;
}

// GET /v1/charges/search (gateway.h), or /v1/payment_intents/search with
// `intents`: newest first, at most `limit`.
GatewayResponse Search(const DialectRequest& request, const ChargeDesk& desk, bool intents) {
  const std::optional<std::string> query = QueryParam(request.query, "query");
  if (!query) return InvalidRequest("parameter_missing", "query", "Missing required param: query.");
  if (QueryParam(request.query, "page")) {
    return InvalidRequest("parameter_unknown", "page", "fake_gateway's search has no further pages.");
  }
  const std::optional<int> limit = SearchLimit(request.query);
  if (!limit) return InvalidRequest("parameter_invalid_integer", "limit", "limit must be an integer from 1 to 100.");
  auto parsed = ParseMetadataQuery(*query);
  if (const auto* problem = std::get_if<std::string>(&parsed)) return InvalidRequest("", "query", *problem);
  const MetadataClause& clause = std::get<MetadataClause>(parsed);
  const std::vector<ChargeRecord> charges = desk.SearchableWithMetadata(clause.key, clause.value);
  std::vector<ChargeRecord> hits;
  bool has_more = false;
  for (auto it = charges.rbegin(); it != charges.rend(); ++it) {
    if (IsIntent(*it) != intents) continue;
    if (hits.size() == static_cast<size_t>(*limit)) {
      has_more = true;
      break;
    }
    hits.push_back(*it);
  }
  return JsonResponse(200, intents ? IntentSearchJson(hits, has_more) : ChargeSearchJson(hits, has_more));
}

// GET /v1/charges/{id}, or GET /v1/payment_intents/{id} with `intents`:
// read-after-write, so from the ledger's index by id, never lagged.
GatewayResponse Retrieve(std::string_view id, const ChargeDesk& desk, bool intents) {
  if (const std::optional<ChargeRecord> payment = desk.ChargeById(std::string(id));
      payment && IsIntent(*payment) == intents) {
    return JsonResponse(200, intents ? IntentJson(*payment) : ChargeJson(*payment));
  }
  return ErrorResponse(404, "invalid_request_error", "resource_missing", "id",
                       fmt::format("No such {}: '{}'", intents ? "payment_intent" : "charge", id));
}

// GET /v1/charges, or GET /v1/payment_intents with `intents` (stripe_list.h).
GatewayResponse List(const DialectRequest& request, const ChargeDesk& desk, bool intents) {
  auto parsed = ParseListQuery(request.query);
  if (const auto* problem = std::get_if<ListProblem>(&parsed)) {
    return InvalidRequest("parameter_invalid", problem->param, problem->message);
  }
  std::vector<ChargeRecord> payments = desk.Charges();
  std::erase_if(payments, [&](const ChargeRecord& p) { return IsIntent(p) != intents; });
  auto page = ListPayments(payments, std::get<ListQuery>(parsed));
  if (const auto* problem = std::get_if<ListProblem>(&page)) {
    return ErrorResponse(404, "invalid_request_error", "resource_missing", problem->param, problem->message);
  }
  const ListPage& listed = std::get<ListPage>(page);
  return JsonResponse(200, PaymentListJson(listed.data, listed.has_more, intents));
}

// The {id} of "<collection>/{id}", or "" for any other path.
std::string_view IdUnder(std::string_view collection, std::string_view path) {
  if (!path.starts_with(collection) || path.size() <= collection.size() + 1 || path[collection.size()] != '/') {
    return "";
  }
  std::string_view id = path.substr(collection.size() + 1);
  return id.find('/') == std::string_view::npos ? id : "";
}

// The fields of POST /v1/refunds (gateway.h) as a ParsedRefund without its
// key, or the problem.
std::variant<ParsedRefund, GatewayResponse> ParseRefund(std::string_view body) {
  const std::optional<FormFields> fields = ParseForm(body);
  if (!fields) return InvalidRequest("parameter_invalid_string", "", "The request body is not valid form encoding.");
  ParsedRefund refund;
  nlohmann::json canonical = nlohmann::json::object();
  for (const auto& [name, value] : *fields) {
    const bool payment = name == "charge" || name == "payment_intent";
    if (!payment && name != "amount" && name != "reason" && !(name.starts_with("metadata[") && name.ends_with("]"))) {
      return InvalidRequest("parameter_unknown", name, fmt::format("Received unknown parameter: {}", name));
    }
    if (canonical.contains(name) || (payment && !refund.payment_id.empty())) {
      return InvalidRequest("parameter_invalid_string", name, "A refund names one payment, each field once.");
    }
    canonical[name] = value;
    if (payment) refund.payment_id = value;
    if (name == "amount") {
      const bool digits = !value.empty() && value.size() <= 9 &&
                          std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits) return InvalidRequest("parameter_invalid_integer", "amount", "Invalid integer: " + value);
      refund.amount = std::stoll(value);
    }
  }
  if (refund.payment_id.empty()) {
    return InvalidRequest("parameter_missing", "charge", "A refund needs a charge or a payment_intent.");
  }
  // A charge alone keeps the canonical text refunds had before the other
  // fields were accepted, so answers stored then still replay.
  refund.canonical = canonical.size() == 1 && canonical.contains("charge")
                         ? "refund:charge=" + FormEncode(refund.payment_id)
                         : "refund:" + canonical.dump();
  return refund;
}

bool IsValidKey(std::string_view key) {
  auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; };
  return !key.empty() && key.size() <= kMaxKeyLength && IsValidUtf8(key) &&
         std::none_of(key.begin(), key.end(), control);
}

class StripeDialect final : public Dialect {
 public:
  std::string_view name() const override { return "stripe"; }

  std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const override {
    for (const bool intents : {false, true}) {
      if (request.path != (intents ? kIntentsPath : kChargesPath)) continue;
      if (request.method == "POST") return Create(request, desk, intents);
      if (request.method == "GET") return Lookup(desk, [&] { return List(request, desk, intents); });
      return NotAllowed(request, "GET, POST");
    }
    if (request.path == kSearchPath) {
      return request.method == "GET" ? Lookup(desk, [&] { return Search(request, desk, /*intents=*/false); })
                                     : NotAllowed(request, "GET");
    }
    if (request.path == kRefundsPath) {
      return request.method == "POST" ? CreateRefund(request, desk) : NotAllowed(request, "POST");
    }
    if (request.path == kIntentSearchPath) {
      return request.method == "GET" ? Lookup(desk, [&] { return Search(request, desk, /*intents=*/true); })
                                     : NotAllowed(request, "GET");
    }
    for (const bool intents : {false, true}) {
      const std::string_view id = IdUnder(intents ? kIntentsPath : kChargesPath, request.path);
      if (id.empty()) continue;
      return request.method == "GET" ? Lookup(desk, [&] { return Retrieve(id, desk, intents); })
                                     : NotAllowed(request, "GET");
    }
    return std::nullopt;
  }

  Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const override {
    return {200, IsIntent(charge) ? IntentJson(record) : ChargeJson(record)};
  }

  // Customer 13's decline, or (intents only) customer 14's requires_action.
  Answer Declined(const ParsedCharge& charge, const std::string& id) const override {
    if (!IsIntent(charge)) return {402, ErrorJson("card_error", "card_declined", "", kDeclineMessage)};
    const ChargeParams& p = charge.params;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const ChargeRecord request{id,
                               charge.key,
                               p.amount,
                               p.currency,
                               p.customer,
                               p.description,
                               std::chrono::duration_cast<std::chrono::seconds>(now).count(),
                               p.metadata};
    if (NeedsAuthentication(p.customer)) {
      return {200, UnpaidIntentJson(id, request, "requires_action", "")};
    }
    return {402, DeclinedIntentErrorJson(id, request, kDeclineMessage)};
  }

  Answer Refunded(const RefundRecord& refund, const ChargeRecord&) const override { return {200, RefundJson(refund)}; }

  GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const override {
    if (problem == RefundProblem::kUnknownPayment) {
      return ErrorResponse(404, "invalid_request_error", "resource_missing", "charge", message);
    }
    if (problem == RefundProblem::kAlreadyRefunded) return InvalidRequest("charge_already_refunded", "charge", message);
    return InvalidRequest("amount_too_large", "amount", message);
  }

  GatewayResponse Failed(std::string_view message) const override {
    GatewayResponse response = ErrorResponse(500, "api_error", "", "", message);
    response.headers.emplace_back("Stripe-Should-Retry", "true");
    return response;
  }

  GatewayResponse InFlight(const std::string&) const override {
    GatewayResponse response =
        ErrorResponse(409, "idempotency_error", "idempotency_key_in_use", "",
                      "There is currently another in-progress request using this Idempotent Key (that probably "
                      "means you submitted twice, and the other request is still going through): please try "
                      "again later.");
    response.headers.emplace_back("Stripe-Should-Retry", "true");
    return response;
  }

  GatewayResponse Reused(const std::string&, const StoredResponse&) const override {
    return ErrorResponse(400, "idempotency_error", "", "",
                         "Keys for idempotent requests can only be used with the same parameters "
                         "they were first used with. Try using a key other than the one used "
                         "before, or wait for the key to expire.");
  }

  GatewayResponse ReplayOf(const std::string& key, const StoredResponse& stored) const override {
    GatewayResponse response = JsonResponse(stored.status, stored.body);
    response.headers.emplace_back("Idempotency-Key", key);
    response.headers.emplace_back("Idempotent-Replayed", "true");
    return response;
  }

 private:
  // `read`'s answer, or the lookup fault's 500.
  template <typename Read>
  GatewayResponse Lookup(ChargeDesk& desk, Read read) const {
    if (desk.LookupFails()) return Failed("Search is temporarily unavailable (injected lookup fault).");
    return read();
  }

  // POST /v1/refunds.
  GatewayResponse CreateRefund(const DialectRequest& request, ChargeDesk& desk) const {
    const std::optional<std::string> key = FindHeader(request.headers, "Idempotency-Key");
    if (key && !IsValidKey(*key)) {
      return InvalidRequest("idempotency_key_invalid", "",
                            fmt::format("An Idempotency-Key is 1 to {} bytes of UTF-8 text.", kMaxKeyLength));
    }
    auto parsed = ParseRefund(request.body);
    if (auto* problem = std::get_if<GatewayResponse>(&parsed)) return std::move(*problem);
    ParsedRefund& refund = std::get<ParsedRefund>(parsed);
    refund.key = key;
    return desk.Refund(*this, refund);
  }

  // POST /v1/charges, or POST /v1/payment_intents with `intent`.
  GatewayResponse Create(const DialectRequest& request, ChargeDesk& desk, bool intent) const {
    ParsedCharge charge;
    charge.key = FindHeader(request.headers, "Idempotency-Key");
    if (charge.key && !IsValidKey(*charge.key)) {
      return InvalidRequest("idempotency_key_invalid", "",
                            fmt::format("An Idempotency-Key is 1 to {} bytes of UTF-8 text.", kMaxKeyLength));
    }
    auto parsed = intent ? ParseIntentParams(request.body) : ParseChargeParams(request.body);
    if (const auto* problem = std::get_if<ParamError>(&parsed)) {
      return InvalidRequest(problem->code, problem->param, problem->message);
    }
    charge.params = std::get<ChargeParams>(std::move(parsed));
    charge.canonical = (intent ? "payment_intent " : "") + CanonicalParams(charge.params);
    if (intent) charge.id_prefix = kIntentPrefix;
    charge.declined =
        IsDeclinedCustomer(charge.params.customer) || (intent && NeedsAuthentication(charge.params.customer));
    if (charge.key) charge.ledger_key = *charge.key;
    return desk.Charge(*this, charge);
  }
};

}  // namespace

std::unique_ptr<Dialect> NewStripeDialect() { return std::make_unique<StripeDialect>(); }

}  // namespace fake_gateway
