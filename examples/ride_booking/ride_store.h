// The example's own database access outside the flow: demo users, the
// caller's rides, health. A few connections shared under a mutex; every
// method is thread-safe and turns database failures into a Status.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_STORE_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_STORE_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/connection>

#include "phasekey/status.h"

namespace ride_booking {

inline constexpr int kDemoUsers = 100;
inline constexpr long long kDeclinedUser = 13;  // the gateway declines this card

class RideStore {
 public:
  explicit RideStore(std::string url) : url_(std::move(url)) {}

  // Applies the engine's and the example's migrations.
  phasekey::Status Migrate();
  // Makes sure users 1..100 exist with tokens tok_user_<i>; returns token -> id.
  phasekey::Result<std::map<std::string, long long>> EnsureDemoUsers();
  // The user's rides, newest first, as a JSON array.
  phasekey::Result<nlohmann::json> ListRides(long long user_id);
  // The enqueuer's sink: sends the receipt of each job (a row in receipts)
  // unless one was sent for its job id, and records every delivery in
  // receipt_deliveries with whether it sent. One transaction for all.
  phasekey::Status InsertReceipts(const std::vector<nlohmann::json>& receipts);
  phasekey::Status Ping();

 private:
  template <class F>
  phasekey::Status WithConnection(F&& f);
  std::string url_;
  std::mutex mu_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;  // GUARDED_BY(mu_)
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_RIDE_STORE_H_
