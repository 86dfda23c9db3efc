// The chaos demo's simulated clients: careful callers of POST /rides and
// POST /bookings.
//
// Each client makes its logical requests one after the other. A logical
// request has one key ("<run id>-c<client>-r<request>") and one body, both
// kept across its retries. About one request in four books by reference:
// POST /bookings with the key as "booking_reference" in the body and no
// Idempotency-Key header (the service stores it as "book_ride:<key>");
// the others send it as Idempotency-Key to POST /rides. A client retries with backoff (50 ms
// doubling to 1 s, jittered; a Retry-After is honoured up to 2 s) on network
// errors, 409, 503 and a 500 internal-error (which the service documents as
// "nothing was stored; safe to retry"), up to `give_up_after` attempts; then
// it abandons the request to the re-drive worker. Any other answer is final.
// After a final answer it sends the same request once more (the replay, itself
// retried the same way, at least 8 times and for up to a minute, through any
// number of restarts) and records that answer too, for the replay invariant.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CLIENT_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace ride_booking {

class ChaosAttemptLog;  // chaos_events.h

// Counters shared by all clients (and read by the progress bar). Each field
// only grows; relaxed atomics, so a reader sees a roughly current value.
struct ChaosCounters {
  std::atomic<long long> done{0};            // logical requests answered or abandoned
  std::atomic<long long> retries{0};         // attempts after the first, replays included
  std::atomic<long long> conflicts{0};       // 409 answers
  std::atomic<long long> unavailable{0};     // 503 answers
  std::atomic<long long> internal_errors{0}; // retryable 500 answers
  std::atomic<long long> network_errors{0};  // refused, reset, timed out
  std::atomic<long long> replays{0};         // replays answered
  std::atomic<long long> abandoned{0};       // logical requests given up
};

struct ChaosClientOptions {
  std::string host = "127.0.0.1";
  int port = 0;                 // the service; it keeps this port across restarts
  std::string run_id;           // prefix of every key of this run
  int client = 0;               // this client's number, 0-based
  int requests = 50;            // logical requests to make
  int give_up_after = 8;        // attempts per request (a replay gets at least 8)
  std::uint64_t seed = 0;       // with `client`, fixes users, coordinates and jitter
  int timeout_ms = 10000;       // per socket operation; the service answers well within
  // No new logical request starts after this moment (the soak's duration).
  std::chrono::steady_clock::time_point stop_starting_at = std::chrono::steady_clock::time_point::max();
  // When set (by another thread), the client stops before its next attempt,
  // leaving the request unanswered. May be null.
  const std::atomic<bool>* stop = nullptr;
  // When set, every attempt's end and outcome is logged there (the events'
  // unavailability windows, chaos_events.h). May be null.
  ChaosAttemptLog* attempts = nullptr;
};

// One answer as the client saw it.
struct ChaosAnswer {
  bool received = false;  // false: every attempt failed or was retryable
  int status = 0;
  std::string body;
  bool replayed_header = false;  // carried Idempotent-Replayed: true
};

// What happened to one logical request.
struct ChaosRequestRecord {
  std::string key;  // as the service stores it (ChaosStoredKey)
  bool booking = false;  // POST /bookings by reference (else POST /rides)
  long long user_id = 0;
  int attempts = 0;    // for the first final answer
  ChaosAnswer first;   // the first final answer (not received: abandoned)
  ChaosAnswer replay;  // the one extra retry after it (only if first.received)
};

// The Idempotency-Key (or booking reference) of a client's request.
std::string ChaosKey(const std::string& run_id, int client, int request);
// The key row's key for it: the key itself, or "book_ride:<key>" for a
// booking.
std::string ChaosStoredKey(const std::string& key, bool booking);

// Runs one client to the end and returns a record per logical request, in
// order. Blocks for the whole run; updates *counters as it goes. Many
// clients may run at once on different threads.
std::vector<ChaosRequestRecord> RunChaosClient(const ChaosClientOptions& options, ChaosCounters* counters);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CLIENT_H_
