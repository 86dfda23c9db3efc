#include "phasekey/client/retry_policy.h"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace phasekey::client {
namespace {

using std::chrono::milliseconds;

// Whether a status can change on another attempt with the same key and
// request. The reasons, status by status:
//   408 Request Timeout, 425 Too Early: the server did not process the
//       request; sending it again is what the status asks for.
//   409: under the IETF Idempotency-Key draft (§2.7) a 409 means a request
//       with this key is still being processed; the draft says no correction
//       is needed before retrying, and the seed calls treating it as final
//       the second client mistake.
//   429, 503: the server sheds load or is briefly unable; both usually come
//       with Retry-After, which the client honours.
//   502, 504: a proxy or gateway in front of the server failed; the server
//       behind it may not even have seen the request.
//   500: the draft leaves 500 to the resource's documentation. Stripe saves
//       a 500 once the endpoint started executing and replays it for the
//       same key (so a retry returns the same 500); phasekey answers an
//       unstored internal error with 500 "safe to retry with the same key",
//       but also a finished key's final answer (abandoned,
//       operation-unverified) with 500. A retry with the same key is always
//       safe, so 500 is retried, but a replayed 500 is final (it is the
//       stored answer) and max_consecutive_500 bounds the rest.
//   Other 4xx: the request itself is wrong (400, 422), unauthorised (401,
//       403) or aimed at nothing (404, 405); the draft says the client must
//       correct it first, and a corrected request is a new operation with a
//       new key.
//   Other 5xx (501 Not Implemented, 505, 507, 508, 511): no retry fixes them.
bool RetryableStatus(int status) {
  switch (status) {
    case 408:
    case 409:
    case 425:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504: return true;
    default: return false;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<milliseconds> ParseRetryAfter(std::string_view value, std::chrono::system_clock::time_point now) {
  value = Trim(value);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    long long seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range) return milliseconds::max();
    if (ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
    // One day at most: a larger value is not a retry hint but a refusal.
    return milliseconds(std::min(seconds, 86400LL) * 1000);
  }
  // The three HTTP-date forms of RFC 9110 §5.6.7, always GMT.
  static constexpr const char* kFormats[] = {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT",
                                             "%a %b %e %H:%M:%S %Y"};
  const std::string text(value);
  for (const char* format : kFormats) {
    struct tm tm;
    std::memset(&tm, 0, sizeof tm);
    const char* end = ::strptime(text.c_str(), format, &tm);
    if (end == nullptr || *end != '\0') continue;
    const time_t at = ::timegm(&tm);
    const auto when = std::chrono::system_clock::from_time_t(at);
    if (when <= now) return milliseconds(0);
    return std::chrono::duration_cast<milliseconds>(when - now);
  }
  return std::nullopt;
}

// A phasekey problem type naming a key's final state (docs/http.md): the
// same answer comes back on every retry.
bool IsFinalProblem(std::string_view type) {
  return type.ends_with("#abandoned") || type.ends_with("#operation-unverified");
}

RetryDecision DecideRetry(const AttemptResult& attempt, int consecutive_500_before, const RetryOptions& options,
                          std::chrono::system_clock::time_point now) {
  using Transport = AttemptResult::Transport;
  switch (attempt.transport) {
    case Transport::kConnectFailed: return {true, "connection failed: the request was not sent", std::nullopt};
    case Transport::kTimedOut: return {true, "timed out: the same key makes a second attempt safe", std::nullopt};
    case Transport::kBroken: return {true, "connection broken: the same key makes a second attempt safe", std::nullopt};
    case Transport::kAnswered: break;
  }
  const int status = attempt.status;
  std::optional<milliseconds> at_least;
  if (attempt.retry_after) at_least = ParseRetryAfter(*attempt.retry_after, now);
  if (status >= 200 && status < 400) return {false, "final: success or redirect", std::nullopt};
  if (!RetryableStatus(status)) {
    if (status >= 400 && status < 500) return {false, "final: the request must change, under a new key", std::nullopt};
    return {false, "final: no retry can fix this status", std::nullopt};
  }
  if (status == 500) {
    if (attempt.replayed) return {false, "final: a replayed 500 is the server's stored answer", std::nullopt};
    if (IsFinalProblem(attempt.problem_type)) {
      return {false, "final: the key was given up or parked for an operator", std::nullopt};
    }
    if (consecutive_500_before + 1 >= options.max_consecutive_500) {
      return {false, "final: 500 on too many attempts in a row", std::nullopt};
    }
    return {true, "500: may be transient; the same key makes a retry safe", at_least};
  }
  if (status == 409) return {true, "409: the key's first request is still running; retry it later", at_least};
  if (status == 429 || status == 503) return {true, "the server asks to come back later", at_least};
  if (status == 502 || status == 504) return {true, "a gateway in front of the server failed", at_least};
  return {true, "the server did not process the request", at_least};
}

milliseconds BackoffDelay(int retry, const RetryOptions& options, double unit_random,
                          std::optional<milliseconds> at_least) {
  // first_delay * 2^retry without overflow: stop doubling at the cap.
  milliseconds ceiling = options.first_delay;
  for (int i = 0; i < retry && ceiling < options.max_delay; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, options.max_delay);
  unit_random = std::clamp(unit_random, 0.0, 1.0);
  milliseconds wait(static_cast<milliseconds::rep>(static_cast<double>(ceiling.count()) * unit_random));
  if (at_least && *at_least > wait) wait = *at_least;
  return wait;
}

}  // namespace phasekey::client
