// Helpers shared by the adapters: building requests, reading answers, and
// the classification rules every gateway shares. Private to phases/src.
#ifndef PHASEKEY_PHASES_SRC_ANSWER_UTIL_H_
#define PHASEKEY_PHASES_SRC_ANSWER_UTIL_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "phasekey/phases/provider_adapter.h"

namespace phasekey::phases::internal {

using FormFields = std::vector<std::pair<std::string, std::string>>;

// application/x-www-form-urlencoded, fields in the given order; RFC 3986
// unreserved characters are kept, everything else is %XX (so ' ' is %20).
std::string FormEncode(const FormFields& fields);
std::string PercentEncode(std::string_view s);
// Standard base64 (RFC 4648 section 4, with padding), by OpenSSL.
std::string Base64(std::string_view bytes);

ProviderRequest JsonRequest(std::string method, std::string path, const nlohmann::json& body);
ProviderRequest FormRequest(std::string method, std::string path, const FormFields& fields);
ProviderRequest GetRequest(std::string path);

// The body as JSON, or a discarded value when it is not JSON.
nlohmann::json ParseJson(std::string_view body);
// j[key] when it is a string (numbers are printed), else "".
std::string Str(const nlohmann::json& j, std::string_view key);
// j at a path of object keys, or a null JSON.
const nlohmann::json& At(const nlohmann::json& j, std::initializer_list<std::string_view> path);

// A decimal string ("10.50") as a JSON number. Doubles print back as the
// shortest form that round-trips, so the digits sent are the digits given
// (trailing zeros aside) for amounts below 2^53 minor units.
nlohmann::json DecimalNumber(const std::string& decimal);

bool Is2xx(int status);

Classification Succeeded(std::string payment_id, std::string status);
Classification Declined(std::string code, std::string message);
Classification Refused(std::string code, std::string message);
Classification RetryLater(std::string code, std::string message);
Classification Unknown(std::string code, std::string message);

// The transport rule every adapter shares: kNotSent is retryable (nothing
// left), kSentNoAnswer is outcome unknown. nullopt for kAnswered.
std::optional<Classification> TransportFailure(const ProviderAnswer& answer);

// The rule for answers a gateway-specific reading did not settle: 429 is
// retryable; 5xx is retryable where a key protects the resend (`keyed`) and
// outcome unknown where nothing does; any other status is a refusal.
Classification HttpFallback(const ProviderAnswer& answer, bool keyed, std::string code, std::string message);

// `info` with its lookup_window replaced by `window` when it is set
// (AdapterOptions::lookup_window): what each adapter with a lookup hands to
// ProviderAdapter's constructor.
inline AdapterInfo WithLookupWindow(AdapterInfo info, std::optional<std::chrono::milliseconds> window) {
  if (window) info.lookup_window = *window;
  return info;
}

}  // namespace phasekey::phases::internal

#endif  // PHASEKEY_PHASES_SRC_ANSWER_UTIL_H_
