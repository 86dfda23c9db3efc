// The part of Stripe's search query language the stripe dialect answers
// (https://docs.stripe.com/search): one metadata clause,
//   metadata['KEY']:'VALUE'
// with single or double quotes, and a backslash escaping the character after
// it inside a quoted string. Whitespace around the clause is ignored. Other
// fields, operators (AND, OR, -, ~, >) and several clauses are not
// supported: a test gateway only needs what the phases/ Stripe adapter sends.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_STRIPE_SEARCH_H_
#define RIDE_BOOKING_FAKE_GATEWAY_STRIPE_SEARCH_H_

#include <string>
#include <string_view>
#include <variant>

namespace fake_gateway {

// A parsed metadata clause: charges whose metadata[key] is exactly value.
struct MetadataClause {
  std::string key;
  std::string value;
};

// The clause `query` (already percent-decoded) states, or why it cannot be
// answered (a message for a 400 invalid_request_error).
std::variant<MetadataClause, std::string> ParseMetadataQuery(std::string_view query);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_STRIPE_SEARCH_H_
