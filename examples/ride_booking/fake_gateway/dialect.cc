#include "fake_gateway/dialect.h"

#include <strings.h>

namespace fake_gateway {

std::optional<std::string> FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [field, value] : headers) {
    if (field.size() == name.size() && ::strncasecmp(field.data(), name.data(), name.size()) == 0) {
      return value;
    }
  }
  return std::nullopt;
}

GatewayResponse JsonResponse(int status, std::string body) {
  return {status, {{"Content-Type", "application/json"}}, std::move(body), false};
}

GatewayResponse Dialect::Reused(const std::string& key, const StoredResponse& stored) const {
  return ReplayOf(key, stored);
}

GatewayResponse Dialect::ReplayOf(const std::string&, const StoredResponse& stored) const {
  return JsonResponse(stored.status, stored.body);
}

std::vector<std::string> DialectNames() { return {"stripe", "adyen", "square", "tap", "moyasar", "hyperpay"}; }

std::unique_ptr<Dialect> NewDialect(std::string_view name) {
  if (name == "stripe") return NewStripeDialect();
  if (name == "adyen") return NewAdyenDialect();
  if (name == "square") return NewSquareDialect();
  if (name == "tap") return NewTapDialect();
  if (name == "moyasar") return NewMoyasarDialect();
  if (name == "hyperpay") return NewHyperPayDialect();
  return nullptr;
}

}  // namespace fake_gateway
