// The chaos demo's simulated clients: careful callers of POST /rides and
// POST /bookings.
//
// Each client sends its logical requests one after the other through
// phasekey's client library (phasekey/client/client.h): a logical request is
// one intent, named "<run id>-c<client>-r<request>", whose UUIDv7 key and
// body stay the same across its retries. About one request in four books by
// reference: POST /bookings with the key as "booking_reference" in the body
// and no Idempotency-Key header (Request::key_in_body; the service stores it
// as "book_ride:<key>"); the others send it as Idempotency-Key to POST
// /rides. The library retries by its table (retry_policy.h: network errors,
// 409, 503, ...) with backoff (full jitter from 50 ms, capped at 1 s; a
// Retry-After wins); a 500 internal-error (which the service documents as
// "nothing was stored; safe to retry") is retried however often it comes,
// and any other 500 is final at once. After `give_up_after` attempts, and no
// sooner than those attempts' longest backoff with the demo's earlier client
// (3.55 s for 8), the client stops the Send (SendOptions::stop) and abandons
// the request to the re-drive worker. After a final answer it sends the same intent once more
// (the replay, retried the same way, at least 8 times and for up to a
// minute, through any number of restarts) and records that answer too, for
// the replay invariant. Every attempt is counted (SendOptions::on_attempt).
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CLIENT_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ride_booking {

class ChaosAttemptLog;  // events.h
class ChaosHistory;     // history.h

// Counters shared by all clients (and read by the progress bar). Each field
// only grows; relaxed atomics, so a reader sees a roughly current value.
struct ChaosCounters {
  std::atomic<long long> done{0};             // logical requests answered or abandoned
  std::atomic<long long> retries{0};          // attempts after the first, replays included
  std::atomic<long long> conflicts{0};        // 409 answers
  std::atomic<long long> unavailable{0};      // 503 answers
  std::atomic<long long> internal_errors{0};  // retryable 500 answers
  std::atomic<long long> network_errors{0};   // refused, reset, timed out
  std::atomic<long long> replays{0};          // replays answered
  std::atomic<long long> abandoned{0};        // logical requests given up
};

struct ChaosClientOptions {
  std::string host = "127.0.0.1";
  int port = 0;            // the service; it keeps this port across restarts
  std::string run_id;      // names the run's intents (the keys are the library's)
  int client = 0;          // this client's number, 0-based
  int requests = 50;       // logical requests to make
  int give_up_after = 8;   // attempts per request (a replay gets at least 8)
  std::uint64_t seed = 0;  // with `client`, fixes users, coordinates and jitter
  int timeout_ms = 10000;  // per socket operation; the service answers well within
  // No new logical request starts after this moment (the soak's duration).
  std::chrono::steady_clock::time_point stop_starting_at = std::chrono::steady_clock::time_point::max();
  // When set (by another thread), the client stops after its current
  // attempt (or before its next request), leaving the request unanswered.
  // May be null.
  const std::atomic<bool>* stop = nullptr;
  // When set, every attempt's end and outcome is logged there (the events'
  // unavailability windows, events.h). May be null.
  ChaosAttemptLog* attempts = nullptr;
  // When set, every attempt and every logical request's end is written to
  // the run's history (history.h). May be null.
  ChaosHistory* history = nullptr;
  // When set, called before each logical request starts; it may block (the
  // run holds its clients back until a scheduled kill is made). Called on
  // the client's thread. May be empty.
  std::function<void()> before_request;
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
  std::string key;       // as the service stores it (ChaosStoredKey)
  bool booking = false;  // POST /bookings by reference (else POST /rides)
  long long user_id = 0;
  int attempts = 0;    // for the first final answer
  ChaosAnswer first;   // the first final answer (not received: abandoned)
  ChaosAnswer replay;  // the one extra retry after it (only if first.received)
};

// The intent name of a client's request (its key is a UUIDv7).
std::string ChaosIntentName(const std::string& run_id, int client, int request);
// The key row's key for a request's key: the key itself, or
// "book_ride:<key>" for a booking.
std::string ChaosStoredKey(const std::string& key, bool booking);
// The smallest key a run that starts at `start` can give a request (the
// UUIDv7 floor of that millisecond, phasekey::client::MinUuidV7): the
// report selects the run's key rows as those at or above it, no prefix
// needed. Call it before the clients start.
std::string ChaosFirstKey(std::chrono::system_clock::time_point start);

// The run's key rows in SQL: a condition on phasekey.idempotency_keys with
// four parameters, whose values ChaosBoundsOf gives for the run's first
// key. UUIDv7 text from the first key on, bare (36 characters: a
// "book_ride:..." key sorts between two UUIDs too) or as a booking's
// "book_ride:<key>"; byte order (COLLATE "C") is the keys' time order.
inline constexpr char kChaosRunKeys[] =
    "((idempotency_key COLLATE \"C\" BETWEEN $1 AND $2 AND char_length(idempotency_key) = 36) "
    "OR (idempotency_key COLLATE \"C\" BETWEEN $3 AND $4))";
struct ChaosRunKeyBounds {
  std::string from, to, booking_from, booking_to;
};
ChaosRunKeyBounds ChaosBoundsOf(const std::string& first_key);

// Runs one client to the end and returns a record per logical request, in
// order. Blocks for the whole run; updates *counters as it goes. Many
// clients may run at once on different threads.
std::vector<ChaosRequestRecord> RunChaosClient(const ChaosClientOptions& options, ChaosCounters* counters);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CLIENT_H_
