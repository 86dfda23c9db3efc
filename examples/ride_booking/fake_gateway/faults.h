// The faults the gateway injects, set by flags at start-up and by
// POST /_faults at run time.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_FAULTS_H_
#define RIDE_BOOKING_FAKE_GATEWAY_FAULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fake_gateway {

struct Faults {
  // Probability that a charge request fails with 500 before anything is
  // charged or stored: a retry with the same key runs again.
  double fail_rate = 0.0;
  // Probability that, after the charge is made and stored under its key, the
  // connection is closed without any response: the outcome-unknown case.
  // Replays are never dropped, so a retry with the same key learns the
  // outcome.
  double drop_response_rate = 0.0;
  // Sleep before each charge is made (after the key is marked in flight, so
  // a concurrent request with the same key meanwhile gets 409).
  int64_t latency_ms = 0;
  // Probability that a lookup (a search, a query, a retrieve: anything that
  // reads payments) fails with the dialect's 500 before reading anything.
  double lookup_fail_rate = 0.0;
};

// Upper bound of latency_ms: ten minutes, far above any client timeout.
inline constexpr int64_t kMaxLatencyMs = 600'000;

// nullopt if every rate is within [0, 1] and latency_ms within
// [0, kMaxLatencyMs]; otherwise what is wrong.
std::optional<std::string> ValidateFaults(const Faults& faults);

// Applies the members of the JSON object `body` ("fail_rate",
// "drop_response_rate", "latency_ms", "lookup_fail_rate") to *faults; members left out keep their
// value. On an unknown member, a wrong type or an out-of-range value returns
// the problem and leaves *faults unchanged.
std::optional<std::string> MergeFaultsJson(std::string_view body, Faults* faults);

// {"fail_rate":..,"drop_response_rate":..,"latency_ms":..,"lookup_fail_rate":..}
std::string FaultsJson(const Faults& faults);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_FAULTS_H_
