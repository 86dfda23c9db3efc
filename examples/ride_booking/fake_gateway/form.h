// Decoding of application/x-www-form-urlencoded bodies, the encoding of
// Stripe's v1 API requests.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_FORM_H_
#define RIDE_BOOKING_FAKE_GATEWAY_FORM_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fake_gateway {

using FormFields = std::vector<std::pair<std::string, std::string>>;

// Splits `body` at '&' into name=value pairs, in order, decoding '+' as a
// space and %XX escapes. A pair without '=' has an empty value; empty pairs
// ("a=1&&b=2") are skipped. Returns nullopt if an escape is malformed
// ("%", "%G1"). Duplicate names are kept; the caller decides about them.
std::optional<FormFields> ParseForm(std::string_view body);

// Percent-encodes `text` for use as a form value (the inverse of the
// decoding above): unreserved characters stay, a space becomes '+'.
std::string FormEncode(std::string_view text);

// True if `text` is well-formed UTF-8 (no overlong forms, no surrogates),
// so it can be put into a JSON document.
bool IsValidUtf8(std::string_view text);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_FORM_H_
