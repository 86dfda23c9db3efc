// The ride flow, as in Leach's Rocket Rides:
//
//   started         create the ride and its audit record     (atomic)
//   ride_created    charge 2000 usd through the gateway       (foreign; the
//                   provider is the RideCharger's, ride_charger.h)
//   charge_created  stage the receipt job and respond 201     (atomic)
//   finished
//
// Accounts are "user_<id>"; the gateway customer is the user id.
//
// Two flows run these phases: create_ride (POST /rides) is keyed by the
// client's Idempotency-Key; book_ride (POST /bookings) by the booking
// reference the client chose, "booking_reference" in the body, with no key
// header (a natural key, docs/natural-keys.md).
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_FLOW_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_FLOW_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasekey/flow.h"
#include "ride_charger.h"

namespace ride_booking {

inline constexpr phasekey::RecoveryPoint kRideCreated{"ride_created"};
inline constexpr phasekey::RecoveryPoint kChargeCreated{"charge_created"};
inline constexpr char kFlowName[] = "create_ride";
inline constexpr char kBookingFlowName[] = "book_ride";
// Where book_ride finds its key: a JSON pointer into the body.
inline constexpr char kBookingReference[] = "/booking_reference";
inline constexpr long long kRideAmount = 2000;  // minor units
inline constexpr char kRideCurrency[] = "usd";
// Where the service's problem types point: "<kDocsUrl>#<slug>".
inline constexpr char kDocsUrl[] = "https://phasekey.dev/docs/ride-booking";

// The fields every flow of the example masks wherever its bodies are shown
// or logged (Flow::Builder::Masked): a card's number and CVC, and an IBAN,
// each as a JSON pointer. The example's own bodies carry none of them (a
// ride is paid with the user's saved payment method, ride_charger.h); these
// are where a client paying inline would put them, and a body is stored as
// sent, unknown members included, so such a body is never shown in the
// clear.
std::vector<std::string> MaskedFields();

// `charger` must outlive the flows.
std::shared_ptr<const phasekey::Flow> MakeRideFlow(const RideCharger& charger);
std::shared_ptr<const phasekey::Flow> MakeBookingFlow(const RideCharger& charger);

// "user_<id>" for a user id, and back (nullopt if not of that form).
std::string AccountOf(long long user_id);
std::optional<long long> UserOf(const std::string& account);

// Checks the ride parameters of a request body, parsed: four numbers,
// latitudes within ±90, longitudes within ±180. Returns the problem's
// detail, or "" when valid.
std::string InvalidRideParams(const nlohmann::json& body);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_FLOW_H_
