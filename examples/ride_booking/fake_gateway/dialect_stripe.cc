// The Stripe dialect: the Charges API of Stripe's API v1, as gateway.h
// describes it (POST /v1/charges, form-encoded, Idempotency-Key header, 409
// idempotency_key_in_use, 400 idempotency_error for other parameters, 402
// card_error for customer 13).
#include <fmt/format.h>

#include <algorithm>
#include <variant>

#include "fake_gateway/dialect.h"
#include "fake_gateway/form.h"
#include "fake_gateway/stripe_json.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 255;  // Stripe: "up to 255 characters long"
constexpr char kDeclineMessage[] = "Your card was declined.";

GatewayResponse ErrorResponse(int status, std::string_view type, std::string_view code, std::string_view param,
                              std::string_view message) {
  return JsonResponse(status, ErrorJson(type, code, param, message));
}

GatewayResponse InvalidRequest(std::string_view code, std::string_view param, std::string_view message) {
  return ErrorResponse(400, "invalid_request_error", code, param, message);
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
    if (request.path != "/v1/charges") return std::nullopt;
    if (request.method != "POST") {
      GatewayResponse response = InvalidRequest(
          "", "", fmt::format("{} {} is not supported; use POST.", request.method, request.path));
      response.status = 405;
      response.headers.emplace_back("Allow", "POST");
      return response;
    }
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
};

}  // namespace

std::unique_ptr<Dialect> NewStripeDialect() { return std::make_unique<StripeDialect>(); }

}  // namespace fake_gateway
