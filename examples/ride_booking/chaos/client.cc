#include "chaos/client.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <stop_token>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chaos/events.h"
#include "chaos/history.h"
#include "phasekey/client/client.h"
#include "phasekey/client/uuid7.h"
#include "phasekey/fingerprint.h"
#include "ride_flow.h"
#include "ride_store.h"

namespace ride_booking {
namespace {

namespace pc = phasekey::client;
using std::chrono::milliseconds;

constexpr milliseconds kBackoffStart{50};
constexpr milliseconds kBackoffCap{1000};
// The replay checks an invariant rather than modelling a client, so it
// keeps trying for this long (through any number of restarts: in the soak
// the service may die every second) and at least kMinReplayAttempts times.
constexpr int kMinReplayAttempts = 8;
constexpr std::chrono::seconds kReplayPatience{60};
// The least time a client keeps trying before it gives a request up: what
// `give_up_after` attempts could take with the demo's earlier backoff (50 ms
// doubling to 1 s). The library's full jitter often waits less, and a
// client that gave up within the second or two a killed service takes to
// come back on a busy machine would leave to the worker what the demo's
// clients used to see answered.
milliseconds LeastPatience(int give_up_after) {
  milliseconds total{0};
  for (int attempt = 1; attempt < give_up_after; ++attempt) {
    total += std::min<milliseconds>(kBackoffCap, kBackoffStart * (1LL << std::min(attempt - 1, 10)));
  }
  return total;
}

// A Send ends by its attempt count or a stop, not by the library's
// deadline; this one only bounds a run gone wrong.
constexpr std::chrono::hours kSendDeadline{1};

// Whether the problem body names the given slug ("...#slug").
bool ProblemIs(std::string_view body, std::string_view slug) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return false;
  return j["type"].get<std::string>().ends_with("#" + std::string(slug));
}

// When each attempt of a client's Sends began and was written: its Client's
// on_step sets `sent_ms` at "attempt.sent" (the client's own thread, as the
// attempt ends: no lock needed).
struct AttemptTimes {
  double start_ms = 0;  // the Send's start, then the previous attempt's end
  double sent_ms = 0;   // 0: not written since start_ms
  void Begin() {
    start_ms = ChaosHistoryNowMs();
    sent_ms = 0;
  }
  // Returns {start, sent, end} of the attempt just ended; the next begins now.
  std::array<double, 3> End() {
    const std::array<double, 3> t{start_ms, sent_ms, ChaosHistoryNowMs()};
    start_ms = t[2];
    sent_ms = 0;
    return t;
  }
};

// One attempt's history event (history.h); `tag` names the request.
nlohmann::json AttemptEvent(const pc::AttemptReport& r, bool retryable, const std::array<double, 3>& t,
                            const nlohmann::json& tag) {
  nlohmann::json e = tag;
  e["type"] = "attempt";
  e["attempt"] = r.attempt;
  e["start_ms"] = t[0];
  e["sent_ms"] = t[1] > 0 ? nlohmann::json(t[1]) : nlohmann::json(nullptr);
  e["end_ms"] = t[2];
  const bool answered = r.transport == pc::AttemptResult::Transport::kAnswered;
  e["transport"] = answered ? "answered" : (r.error.empty() ? "failed" : std::string(r.error));
  e["status"] = answered ? r.status : 0;
  e["body_sha256"] = answered ? nlohmann::json(ChaosSha256Hex(r.body)) : nlohmann::json(nullptr);
  e["replayed"] = r.replayed;
  e["retry"] = retryable;
  return e;
}

// SHA-256 of the canonical body (phasekey/fingerprint.h), as the history
// records a request's fingerprint.
std::string BodyFingerprint(const std::string& body) {
  auto f = phasekey::FingerprintJson(body);
  return f ? f->sha256_hex : ChaosSha256Hex(body);
}

// A memory journal whose intents never look done, so that a second Send of
// an answered intent sends it again under its key: the replay asks the
// server, not the journal, for the answer (a real client would want the
// journal's; the replay checks the server's store).
class AskAgainJournal final : public pc::Journal {
 public:
  pc::IntentRecord CreateOrGet(const pc::IntentRecord& record) override {
    return Unanswered(inner_->CreateOrGet(record));
  }
  std::optional<pc::IntentRecord> Find(const std::string& name) override {
    std::optional<pc::IntentRecord> r = inner_->Find(name);
    if (r) r = Unanswered(std::move(*r));
    return r;
  }
  void MarkDone(const std::string& name, const pc::StoredAnswer& answer) override { inner_->MarkDone(name, answer); }
  std::vector<pc::IntentRecord> ListUnfinished() override { return inner_->ListUnfinished(); }

 private:
  static pc::IntentRecord Unanswered(pc::IntentRecord r) {
    r.answer.reset();
    return r;
  }
  std::shared_ptr<pc::Journal> inner_ = pc::NewMemoryJournal();
};

pc::ClientOptions LibraryOptions(const ChaosClientOptions& o, AttemptTimes* times) {
  pc::ClientOptions c;
  c.on_step = [times](std::string_view step, const pc::Intent&) {
    if (step == "attempt.sent") times->sent_ms = ChaosHistoryNowMs();
  };
  c.journal = std::make_shared<AskAgainJournal>();
  c.retry.first_delay = kBackoffStart;
  c.retry.max_delay = kBackoffCap;
  c.retry.deadline = kSendDeadline;
  c.retry.attempt_timeout = milliseconds(o.timeout_ms);
  // A 500 internal-error is retried until the client's own limit; another
  // 500 ends the Send from on_attempt (OneSend).
  c.retry.max_consecutive_500 = std::numeric_limits<int>::max();
  c.async_threads = 1;  // no AsyncSend here
  return c;
}

// One Send of `intent` with the chaos's counting and stopping rules: stops
// once `give_up_after` retryable attempts were made and `keep_trying_until`
// has passed, at a 500 other than internal-error (final for the demo), or
// when o.stop is set. Returns the answer as the demo records it; *attempts gets
// the attempts made.
ChaosAnswer OneSend(pc::Client& client, const pc::Intent& intent, const ChaosClientOptions& o, int give_up_after,
                    std::chrono::steady_clock::time_point keep_trying_until, ChaosCounters* c, int* attempts,
                    AttemptTimes* times, const nlohmann::json& tag) {
  std::stop_source stop;
  times->Begin();
  if (o.stop != nullptr && o.stop->load()) stop.request_stop();
  bool final_500 = false;
  pc::SendOptions send;
  send.stop = stop.get_token();
  send.on_attempt = [&](const pc::AttemptReport& r) {
    if (r.attempt > 1) c->retries.fetch_add(1, std::memory_order_relaxed);
    bool retryable = r.retry;
    if (r.transport != pc::AttemptResult::Transport::kAnswered) {
      c->network_errors.fetch_add(1, std::memory_order_relaxed);
    } else if (r.status == 409) {
      c->conflicts.fetch_add(1, std::memory_order_relaxed);
    } else if (r.status == 503) {
      c->unavailable.fetch_add(1, std::memory_order_relaxed);
    } else if (r.status == 500 && r.retry) {
      if (ProblemIs(r.body, "internal-error")) {
        c->internal_errors.fetch_add(1, std::memory_order_relaxed);
      } else {
        final_500 = true;  // e.g. an "abandoned" answer
        retryable = false;
        stop.request_stop();
      }
    }
    if (o.attempts != nullptr) o.attempts->Record(retryable);
    if (o.history != nullptr) o.history->Write(AttemptEvent(r, retryable, times->End(), tag));
    if (!retryable) return;
    if (r.attempt >= give_up_after && std::chrono::steady_clock::now() >= keep_trying_until) stop.request_stop();
    if (o.stop != nullptr && o.stop->load()) stop.request_stop();
  };
  const pc::Answer a = client.Send(intent, send);
  *attempts = a.attempts;
  const bool received = a.outcome == pc::Outcome::kSucceeded || a.outcome == pc::Outcome::kFailed || final_500;
  if (!received) return ChaosAnswer{};
  return ChaosAnswer{true, a.status, a.body, a.replayed};
}

// A ride between two random valid points, with six decimals.
std::string RandomRideBody(std::mt19937_64* rng) {
  std::uniform_real_distribution<double> lat(-90, 90), lon(-180, 180);
  const double olat = lat(*rng), olon = lon(*rng), tlat = lat(*rng), tlon = lon(*rng);
  return fmt::format(R"({{"origin_lat":{:.6f},"origin_lon":{:.6f},"target_lat":{:.6f},"target_lon":{:.6f}}})", olat,
                     olon, tlat, tlon);
}

// POST /rides with the key as Idempotency-Key, or the same ride booked by
// reference: POST /bookings with the key as the body's booking_reference.
pc::Request RideRequest(const ChaosClientOptions& o, long long user_id, bool booking, std::string body) {
  pc::Request r;
  r.method = "POST";
  r.url = fmt::format("http://{}:{}{}", o.host, o.port, booking ? "/bookings" : "/rides");
  r.headers = {{"Authorization", "Bearer tok_user_" + std::to_string(user_id)}, {"Content-Type", "application/json"}};
  r.body = std::move(body);
  if (booking) r.key_in_body = kBookingReference;
  return r;
}

}  // namespace

std::string ChaosIntentName(const std::string& run_id, int client, int request) {
  return run_id + "-c" + std::to_string(client) + "-r" + std::to_string(request);
}

std::string ChaosStoredKey(const std::string& key, bool booking) {
  return booking ? std::string(kBookingFlowName) + ":" + key : key;
}

std::string ChaosFirstKey(std::chrono::system_clock::time_point start) { return pc::FormatUuid(pc::MinUuidV7(start)); }

ChaosRunKeyBounds ChaosBoundsOf(const std::string& first_key) {
  const std::string last = "ffffffff-ffff-ffff-ffff-ffffffffffff";
  return {first_key, last, ChaosStoredKey(first_key, true), ChaosStoredKey(last, true)};
}

std::vector<ChaosRequestRecord> RunChaosClient(const ChaosClientOptions& o, ChaosCounters* c) {
  // What is asked depends on the seed alone (the library's jitter is its own).
  std::seed_seq content_seed{static_cast<std::uint32_t>(o.seed), static_cast<std::uint32_t>(o.seed >> 32),
                             static_cast<std::uint32_t>(o.client), 1u};
  std::mt19937_64 content(content_seed);
  std::uniform_int_distribution<long long> users(1, kDemoUsers);
  AttemptTimes times;
  pc::Client client(LibraryOptions(o, &times));
  std::vector<ChaosRequestRecord> records;
  records.reserve(static_cast<std::size_t>(std::clamp(o.requests, 0, 1024)));
  for (int i = 0; i < o.requests; ++i) {
    if (o.before_request) o.before_request();
    if (o.stop != nullptr && o.stop->load()) break;
    if (std::chrono::steady_clock::now() >= o.stop_starting_at) break;
    ChaosRequestRecord rec;
    rec.user_id = users(content);
    rec.booking = std::uniform_int_distribution<int>(0, 3)(content) == 0;
    const pc::Intent intent = client.IntentNamed(ChaosIntentName(o.run_id, o.client, i),
                                                 RideRequest(o, rec.user_id, rec.booking, RandomRideBody(&content)));
    rec.key = ChaosStoredKey(intent.key(), rec.booking);
    nlohmann::json tag = {{"key", rec.key}, {"client", o.client}, {"request", i}, {"send", "first"}};
    if (o.history != nullptr) tag["fingerprint"] = BodyFingerprint(intent.request().body);
    rec.first =
        OneSend(client, intent, o, o.give_up_after, std::chrono::steady_clock::now() + LeastPatience(o.give_up_after),
                c, &rec.attempts, &times, tag);
    if (rec.first.received) {
      int replay_attempts = 0;
      tag["send"] = "replay";
      rec.replay = OneSend(client, intent, o, std::max(o.give_up_after, kMinReplayAttempts),
                           std::chrono::steady_clock::now() + kReplayPatience, c, &replay_attempts, &times, tag);
      if (rec.replay.received) c->replays.fetch_add(1, std::memory_order_relaxed);
    } else {
      c->abandoned.fetch_add(1, std::memory_order_relaxed);
    }
    if (o.history != nullptr) {
      o.history->Write({{"type", "request"},
                        {"key", rec.key},
                        {"client", o.client},
                        {"request", i},
                        {"outcome", rec.first.received ? "answered" : "abandoned"}});
    }
    c->done.fetch_add(1, std::memory_order_relaxed);
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace ride_booking
