// The Stripe dialect: the Charges API of Stripe's API v1, as gateway.h
// describes it (POST /v1/charges, form-encoded, Idempotency-Key header, 409
// idempotency_key_in_use, 400 idempotency_error for other parameters, 402
// card_error for customer 13), and its two lookups: GET /v1/charges/search
// by one metadata clause, and GET /v1/charges/{id}. Lookups read the ledger's
// charges, which outlive their idempotency keys.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fake_gateway/dialect.h"
#include "fake_gateway/dialect_util.h"
#include "fake_gateway/form.h"
#include "fake_gateway/stripe_json.h"
#include "fake_gateway/stripe_search.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 255;  // Stripe: "up to 255 characters long"
constexpr char kDeclineMessage[] = "Your card was declined.";
constexpr std::string_view kChargesPath = "/v1/charges";
constexpr std::string_view kSearchPath = "/v1/charges/search";
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
  GatewayResponse response = InvalidRequest(
      "", "", fmt::format("{} {} is not supported; use {}.", request.method, request.path, allowed));
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

// GET /v1/charges/search (gateway.h): newest first, at most `limit`.
GatewayResponse SearchCharges(const DialectRequest& request, const ChargeDesk& desk) {
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
  const std::vector<ChargeRecord> charges = desk.Charges();
  std::vector<ChargeRecord> hits;
  bool has_more = false;
  for (auto it = charges.rbegin(); it != charges.rend(); ++it) {
    const auto value = it->metadata.find(clause.key);
    if (value == it->metadata.end() || value->second != clause.value) continue;
    if (hits.size() == static_cast<size_t>(*limit)) {
      has_more = true;
      break;
    }
    hits.push_back(*it);
  }
  return JsonResponse(200, ChargeSearchJson(hits, has_more));
}

// GET /v1/charges/{id}.
GatewayResponse RetrieveCharge(std::string_view id, const ChargeDesk& desk) {
  for (const ChargeRecord& charge : desk.Charges()) {
    if (charge.id == id) return JsonResponse(200, ChargeJson(charge));
  }
  return ErrorResponse(404, "invalid_request_error", "resource_missing", "id",
                       fmt::format("No such charge: '{}'", id));
}

// The {id} of "/v1/charges/{id}", or "" for any other path.
std::string_view ChargeIdOf(std::string_view path) {
  if (!path.starts_with(kChargesPath) || path.size() <= kChargesPath.size() + 1 ||
      path[kChargesPath.size()] != '/') {
    return "";
  }
  std::string_view id = path.substr(kChargesPath.size() + 1);
  return id.find('/') == std::string_view::npos ? id : "";
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
    if (request.path == kChargesPath) {
      return request.method == "POST" ? Create(request, desk) : NotAllowed(request, "POST");
    }
    if (request.path == kSearchPath) {
      return request.method == "GET" ? SearchCharges(request, desk) : NotAllowed(request, "GET");
    }
    if (std::string_view id = ChargeIdOf(request.path); !id.empty()) {
      return request.method == "GET" ? RetrieveCharge(id, desk) : NotAllowed(request, "GET");
    }
    return std::nullopt;
  }

  Answer Charged(const ParsedCharge&, const ChargeRecord& record) const override {
    return {200, ChargeJson(record)};
  }

  Answer Declined(const ParsedCharge&, const std::string&) const override {
    return {402, ErrorJson("card_error", "card_declined", "", kDeclineMessage)};
  }

  GatewayResponse Failed(std::string_view message) const override {
    GatewayResponse response =
        ErrorResponse(500, "api_error", "", "", message);
    response.headers.emplace_back("Stripe-Should-Retry", "true");
    return response;
  }

  GatewayResponse InFlight(const std::string&) const override {
    GatewayResponse response = ErrorResponse(
        409, "idempotency_error", "idempotency_key_in_use", "",
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
  // POST /v1/charges.
  GatewayResponse Create(const DialectRequest& request, ChargeDesk& desk) const {
    ParsedCharge charge;
    charge.key = FindHeader(request.headers, "Idempotency-Key");
    if (charge.key && !IsValidKey(*charge.key)) {
      return InvalidRequest("idempotency_key_invalid", "",
                            fmt::format("An Idempotency-Key is 1 to {} bytes of UTF-8 text.", kMaxKeyLength));
    }
    auto parsed = ParseChargeParams(request.body);
    if (const auto* problem = std::get_if<ParamError>(&parsed)) {
      return InvalidRequest(problem->code, problem->param, problem->message);
    }
    charge.params = std::get<ChargeParams>(std::move(parsed));
    charge.canonical = CanonicalParams(charge.params);
    charge.declined = IsDeclinedCustomer(charge.params.customer);
    if (charge.key) charge.ledger_key = *charge.key;
    return desk.Charge(*this, charge);
  }
};

}  // namespace

std::unique_ptr<Dialect> NewStripeDialect() { return std::make_unique<StripeDialect>(); }

}  // namespace fake_gateway
