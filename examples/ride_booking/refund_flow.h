// The refund flow: POST /rides/{id}/refund, keyed by the client's
// Idempotency-Key like POST /rides, refunds a ride's whole charge through
// the same provider adapter (phasekey::phases::AddRefund):
//
//   started          find the user's ride and its charge          (atomic)
//   ride_refundable  refund the charge at the provider            (foreign)
//   refund_created   record the refund on the ride, respond 200   (atomic)
//   finished
//
// The ride id reaches the phases in the body: phases see the request body,
// not its path, so the service moves the path's {id} into the body as
// "ride_id" before the runner sees the request (WithRideIdInBody).
//
// Answers: 200 {"ride_id", "charge_id", "refund_id"}; 404 ride-not-found
// (no such ride of this user); 409 ride-not-charged, 409 ride-refunded (the
// ride has a refund already, made under another key); the refund phase's
// own: 502 when the provider refuses the refund, 500 operation-unverified
// when an earlier attempt may have refunded and the provider cannot say
// (refund_phase.h). Every answer is stored under the key and replayed.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_REFUND_FLOW_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_REFUND_FLOW_H_

#include <memory>

#include "phasekey/flow.h"
#include "phasekey/http.h"
#include "phasekey/runner.h"
#include "ride_charger.h"

namespace ride_booking {

inline constexpr phasekey::RecoveryPoint kRideRefundable{"ride_refundable"};
inline constexpr phasekey::RecoveryPoint kRefundCreated{"refund_created"};
inline constexpr char kRefundFlowName[] = "refund_ride";
inline constexpr char kRefundRoute[] = "/rides/{id}/refund";

// `charger` must outlive the flow.
std::shared_ptr<const phasekey::Flow> MakeRefundFlow(const RideCharger& charger);

// Runs requests through `runner` (which must outlive the function), with the
// {id} of a refund_ride request's path set as "ride_id" in its body (an
// empty body counts as {}; a body that is not a JSON object is left for the
// runner to refuse). Deterministic, so a retry with the same key and body
// is the same request.
phasekey::HttpHandler::Execute WithRideIdInBody(phasekey::Runner& runner);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_REFUND_FLOW_H_
