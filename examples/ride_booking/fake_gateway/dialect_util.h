// Helpers the JSON dialects share: reading request bodies and amounts.
// Private to fake_gateway.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_DIALECT_UTIL_H_
#define RIDE_BOOKING_FAKE_GATEWAY_DIALECT_UTIL_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "fake_gateway/charge_request.h"
#include "fake_gateway/dialect.h"

namespace fake_gateway {

// The body as a JSON object, or nullopt.
std::optional<nlohmann::json> ParseJsonObject(std::string_view body);

// j at a path of object keys when it is a non-empty string, else "".
std::string StringAt(const nlohmann::json& j, std::initializer_list<std::string_view> path);

// A positive integer amount (JSON integer), or nullopt.
std::optional<int64_t> MinorAmount(const nlohmann::json& value);

// A decimal amount in major units ("20.00" or 20.0) of a currency with two
// decimals or none, in minor units; nullopt if malformed, non-positive, or
// carrying more digits than the currency has.
std::optional<int64_t> MajorAmount(const nlohmann::json& value, std::string_view currency);

// Three ASCII letters, lowercased; nullopt otherwise.
std::optional<std::string> Currency(std::string_view text);

// "USD" for "usd".
std::string UpperCurrency(std::string text);

// True for the customer or payment source whose card is always declined: an
// id whose part after the last '_' (or the whole id) is "13".
bool IsDeclinedId(std::string_view id);

// The value of `name` in a query string (percent-decoded), or nullopt.
std::optional<std::string> QueryParam(std::string_view query, std::string_view name);

// 405 with an Allow header and a plain JSON body.
GatewayResponse MethodNotAllowed(std::string_view allowed);

// `amount_minor` in major units with two decimals ("20.00"), or none for a
// zero-decimal currency (see MajorAmount).
std::string FormatMajor(int64_t amount_minor, std::string_view currency);

// A ParsedCharge's canonical text: the JSON dump of `request` (object members
// sorted). Callers erase the key field first, so that only the parameters
// are compared.
std::string CanonicalJson(nlohmann::json request);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_DIALECT_UTIL_H_
