#include "chaos_client.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chaos_events.h"
#include "chaos_http.h"
#include "ride_flow.h"
#include "ride_store.h"

namespace ride_booking {
namespace {

using std::chrono::milliseconds;

constexpr long long kBackoffStartMs = 50;
constexpr long long kBackoffCapMs = 1000;
// A Retry-After is honoured, but not beyond this: the service's leases are
// short in the demo, and a client that waits longer only slows the run.
constexpr long long kRetryAfterCapMs = 2000;
// The replay checks an invariant rather than modelling a client, so it
// keeps trying for this long (through any number of restarts: in the soak
// the service may die every second) and at least kMinReplayAttempts times.
constexpr int kMinReplayAttempts = 8;
constexpr std::chrono::seconds kReplayPatience{60};

// Whether the problem body names the given slug ("...#slug").
bool ProblemIs(const std::string& body, std::string_view slug) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return false;
  return j["type"].get<std::string>().ends_with("#" + std::string(slug));
}

// Whether an attempt's outcome calls for a retry; counts it if so.
bool IsRetryable(const phasekey::Result<ChaosHttpResponse>& r, ChaosCounters* c) {
  if (!r) {
    c->network_errors.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  switch (r->status) {
    case 409:
      c->conflicts.fetch_add(1, std::memory_order_relaxed);
      return true;
    case 503:
      c->unavailable.fetch_add(1, std::memory_order_relaxed);
      return true;
    case 500:
      if (!ProblemIs(r->body, "internal-error")) return false;  // e.g. a stored "abandoned"
      c->internal_errors.fetch_add(1, std::memory_order_relaxed);
      return true;
    default:
      return false;
  }
}

// The wait before attempt `attempt + 1`: exponential with jitter, at least
// the answer's Retry-After (capped).
milliseconds Backoff(int attempt, const ChaosHttpResponse* answer, std::mt19937_64* rng) {
  const long long base = std::min(kBackoffCapMs, kBackoffStartMs << std::min(attempt - 1, 10));
  long long ms = std::uniform_int_distribution<long long>(base / 2, base)(*rng);
  const std::string* ra = answer != nullptr ? answer->Header("Retry-After") : nullptr;
  long long seconds = 0;
  if (ra != nullptr && std::from_chars(ra->data(), ra->data() + ra->size(), seconds).ec == std::errc()) {
    ms = std::max(ms, std::min(seconds * 1000, kRetryAfterCapMs));
  }
  return milliseconds(ms);
}

ChaosAnswer ToAnswer(const ChaosHttpResponse& r) {
  const std::string* replayed = r.Header("Idempotent-Replayed");
  return ChaosAnswer{true, r.status, r.body, replayed != nullptr && *replayed == "true"};
}

// Sends `request` until an answer is final, or until `give_up_after`
// attempts failed and `keep_trying_until` has passed (or o.stop is set);
// returns the final answer (not received when given up) and sets *attempts
// to the attempts made.
ChaosAnswer SendUntilFinal(const ChaosClientOptions& o, const ChaosHttpRequest& request, int give_up_after,
                           std::chrono::steady_clock::time_point keep_trying_until, std::mt19937_64* jitter,
                           ChaosCounters* c, int* attempts) {
  for (int attempt = 1;; ++attempt) {
    if (o.stop != nullptr && o.stop->load()) break;
    if (attempt > 1) c->retries.fetch_add(1, std::memory_order_relaxed);
    *attempts = attempt;
    auto r = HttpExchange(o.host, o.port, request, milliseconds(o.timeout_ms));
    const bool retryable = IsRetryable(r, c);
    if (o.attempts != nullptr) o.attempts->Record(retryable);
    if (!retryable) return ToAnswer(*r);
    if (attempt >= give_up_after && std::chrono::steady_clock::now() >= keep_trying_until) break;
    std::this_thread::sleep_for(Backoff(attempt, r ? &*r : nullptr, jitter));
  }
  return ChaosAnswer{};
}

// A ride between two random valid points, with six decimals.
std::string RandomRideBody(std::mt19937_64* rng) {
  std::uniform_real_distribution<double> lat(-90, 90), lon(-180, 180);
  const double olat = lat(*rng), olon = lon(*rng), tlat = lat(*rng), tlon = lon(*rng);
  return fmt::format(R"({{"origin_lat":{:.6f},"origin_lon":{:.6f},"target_lat":{:.6f},"target_lon":{:.6f}}})", olat,
                     olon, tlat, tlon);
}

ChaosHttpRequest RideRequest(long long user_id, const std::string& key, std::string body) {
  ChaosHttpRequest r;
  r.method = "POST";
  r.target = "/rides";
  r.headers = {{"Authorization", "Bearer tok_user_" + std::to_string(user_id)},
               {"Idempotency-Key", key},
               {"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

// The same ride booked by reference: the key travels in the body.
ChaosHttpRequest BookingRequest(long long user_id, const std::string& reference, const std::string& ride_body) {
  nlohmann::json body = nlohmann::json::parse(ride_body);
  body["booking_reference"] = reference;
  ChaosHttpRequest r;
  r.method = "POST";
  r.target = "/bookings";
  r.headers = {{"Authorization", "Bearer tok_user_" + std::to_string(user_id)},
               {"Content-Type", "application/json"}};
  r.body = body.dump();
  return r;
}

}  // namespace

std::string ChaosKey(const std::string& run_id, int client, int request) {
  return run_id + "-c" + std::to_string(client) + "-r" + std::to_string(request);
}

std::string ChaosStoredKey(const std::string& key, bool booking) {
  return booking ? std::string(kBookingFlowName) + ":" + key : key;
}

std::vector<ChaosRequestRecord> RunChaosClient(const ChaosClientOptions& o, ChaosCounters* c) {
  // Two generators: what is asked depends on the seed alone; the jitter
  // (drawn as many times as there are retries) cannot shift it.
  std::seed_seq content_seed{static_cast<std::uint32_t>(o.seed), static_cast<std::uint32_t>(o.seed >> 32),
                             static_cast<std::uint32_t>(o.client), 1u};
  std::seed_seq jitter_seed{static_cast<std::uint32_t>(o.seed), static_cast<std::uint32_t>(o.seed >> 32),
                            static_cast<std::uint32_t>(o.client), 2u};
  std::mt19937_64 content(content_seed), jitter(jitter_seed);
  std::uniform_int_distribution<long long> users(1, kDemoUsers);
  std::vector<ChaosRequestRecord> records;
  records.reserve(static_cast<std::size_t>(std::clamp(o.requests, 0, 1024)));
  for (int i = 0; i < o.requests; ++i) {
    if (o.stop != nullptr && o.stop->load()) break;
    if (std::chrono::steady_clock::now() >= o.stop_starting_at) break;
    ChaosRequestRecord rec;
    const std::string key = ChaosKey(o.run_id, o.client, i);
    rec.user_id = users(content);
    rec.booking = std::uniform_int_distribution<int>(0, 3)(content) == 0;
    rec.key = ChaosStoredKey(key, rec.booking);
    const std::string ride = RandomRideBody(&content);
    const ChaosHttpRequest request =
        rec.booking ? BookingRequest(rec.user_id, key, ride) : RideRequest(rec.user_id, key, ride);
    rec.first = SendUntilFinal(o, request, o.give_up_after, {}, &jitter, c, &rec.attempts);
    if (rec.first.received) {
      int replay_attempts = 0;
      rec.replay = SendUntilFinal(o, request, std::max(o.give_up_after, kMinReplayAttempts),
                                  std::chrono::steady_clock::now() + kReplayPatience, &jitter, c, &replay_attempts);
      if (rec.replay.received) c->replays.fetch_add(1, std::memory_order_relaxed);
    } else {
      c->abandoned.fetch_add(1, std::memory_order_relaxed);
    }
    c->done.fetch_add(1, std::memory_order_relaxed);
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace ride_booking
