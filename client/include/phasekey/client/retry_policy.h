// When the client sends an intent again, and how long it waits first. Pure
// functions (no clock, no randomness of their own), so the table is tested
// row by row; docs/clients.md explains each row.
#ifndef PHASEKEY_CLIENT_RETRY_POLICY_H_
#define PHASEKEY_CLIENT_RETRY_POLICY_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace phasekey::client {

// How long the client waits between attempts and how long it keeps trying;
// every default is explained below.
struct RetryOptions {
  // The first backoff's ceiling; retry n (from 0) waits a uniformly random
  // time in [0, min(max_delay, first_delay * 2^n)] ("full jitter": clients
  // that failed together spread out instead of retrying in lockstep).
  // 100 ms: a 409 from a phasekey server usually clears within one
  // database round trip plus the phase in progress.
  std::chrono::milliseconds first_delay{100};
  // The cap of every backoff. 5 s: long enough to stop hammering a server
  // that sheds load, short enough that a client notices recovery quickly.
  // A Retry-After above it still wins (the server knows better).
  std::chrono::milliseconds max_delay{5000};
  // The whole Send: attempts and waits together. When the next wait would
  // end past it, Send gives up and the intent stays unfinished (same key
  // next time). 60 s: above a typical gateway timeout plus a lease, so one
  // slow charge does not turn into a give-up.
  std::chrono::milliseconds deadline{60000};
  // One attempt: connect, write, read the answer. 30 s: a charge through a
  // slow payment gateway can take most of that; a timed-out attempt is
  // retried with the same key, so a short value costs only attempts.
  std::chrono::milliseconds attempt_timeout{30000};
  // At most this many attempts in a row may end in 500 before a 500 counts
  // as final. 3: see RetryDecision's table (500 is sometimes transient and
  // sometimes the server's stored final answer).
  int max_consecutive_500 = 3;
};

// How one attempt ended, as far as the retry decision cares.
struct AttemptResult {
  // How far the attempt got.
  enum class Transport {
    kAnswered,       // an HTTP answer was read (status is set)
    kConnectFailed,  // no connection: the request was certainly not sent
    kTimedOut,       // the attempt timed out (maybe sent, maybe executed)
    kBroken,         // the connection failed mid-exchange (same)
  };
  Transport transport = Transport::kAnswered;  // how far the attempt got
  int status = 0;                              // kAnswered: the HTTP status read
  bool replayed = false;                       // Idempotent-Replayed: true
  std::optional<std::string> retry_after;      // the Retry-After value, if any
  // The "type" member of an application/problem+json answer; empty when the
  // answer is none. A phasekey server's final 500s are told apart by it
  // (docs/http.md: types ending in `#abandoned` and `#operation-unverified`).
  std::string problem_type;
};

// DecideRetry()'s verdict on one attempt.
struct RetryDecision {
  bool retry = false;       // true: send again (same key); false: the answer is final
  std::string_view reason;  // a static phrase for logs and docs
  // The server's Retry-After as a wait, when it sent a valid one: the next
  // attempt waits at least this long.
  std::optional<std::chrono::milliseconds> at_least;
};

// The retry table. Every retry reuses the same key and request, so a retry
// can never execute the operation twice; the table only decides whether
// another attempt can change the answer.
//   transport failure (connect, timeout, broken)  retry
//   2xx, 3xx                                       final
//   408, 409, 425, 429                             retry
//   other 4xx (400, 401, 403, 404, 422, ...)       final: only a changed
//                                                  request could succeed,
//                                                  and that needs a new key
//   500  retry while fewer than max_consecutive_500 attempts in a row ended
//        in 500 and the 500 is not a replay (Idempotent-Replayed: a stored
//        final answer comes back unchanged forever) nor a phasekey problem
//        that is final by its type (`#abandoned`: the key was given up;
//        `#operation-unverified`: parked for an operator; every retry gets
//        the same answer)
//   502, 503, 504                                  retry
//   other 5xx (501, 505, 507, ...)                 final
// `consecutive_500_before`: attempts in a row before this one that ended in
// 500. `now` turns an HTTP-date Retry-After into a wait.
RetryDecision DecideRetry(const AttemptResult& attempt, int consecutive_500_before, const RetryOptions& options,
                          std::chrono::system_clock::time_point now);

// A Retry-After value (RFC 9110 §10.2.3) as a wait from `now`: delta-seconds
// ("120") or an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT"; the obsolete
// RFC 850 and asctime forms too). A date in the past is a zero wait.
// nullopt when the value is neither.
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

// The wait before retry number `retry` (0 for the first retry): full jitter,
// `unit_random` * min(max_delay, first_delay * 2^retry), raised to
// `at_least` when that is larger. `unit_random` must be in [0, 1).
std::chrono::milliseconds BackoffDelay(int retry, const RetryOptions& options, double unit_random,
                                       std::optional<std::chrono::milliseconds> at_least = std::nullopt);

}  // namespace phasekey::client

#endif  // PHASEKEY_CLIENT_RETRY_POLICY_H_
