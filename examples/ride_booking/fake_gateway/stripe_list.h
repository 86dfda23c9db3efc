// The part of Stripe's list API the stripe dialect answers
// (https://docs.stripe.com/api/charges/list, /api/payment_intents/list,
// /api/pagination): GET /v1/charges or GET /v1/payment_intents with
//   created[gte], created[gt], created[lte], created[lt]  Unix seconds
//   limit           1..100, default 10
//   starting_after  an id of the list: the page after it
// newest first (ties: the later made first), with has_more. ending_before,
// expand and the other filters are refused. Unlike search, a list reads
// every payment at once (no lag).
#ifndef RIDE_BOOKING_FAKE_GATEWAY_STRIPE_LIST_H_
#define RIDE_BOOKING_FAKE_GATEWAY_STRIPE_LIST_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fake_gateway/ledger.h"

namespace fake_gateway {

// A list request's parameters.
struct ListQuery {
  int64_t created_from = std::numeric_limits<int64_t>::min();  // inclusive
  int64_t created_to = std::numeric_limits<int64_t>::max();    // inclusive
  int limit = 10;
  std::string starting_after;  // empty: the first page
};

// Why a list request cannot be answered: the parameter and a message for a
// 400 invalid_request_error (404 resource_missing when `missing`).
struct ListProblem {
  std::string param;
  std::string message;
  bool missing = false;  // starting_after names no payment of the list
};

// The parameters `query` (undecoded) states, or the problem.
std::variant<ListQuery, ListProblem> ParseListQuery(std::string_view query);

// One page.
struct ListPage {
  std::vector<ChargeRecord> data;  // newest first
  bool has_more = false;
};

// The page of `payments` (oldest first, as the ledger keeps them) that
// `query` asks for, or the problem (an unknown starting_after).
std::variant<ListPage, ListProblem> ListPayments(const std::vector<ChargeRecord>& payments, const ListQuery& query);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_STRIPE_LIST_H_
