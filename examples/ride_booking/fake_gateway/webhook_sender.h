// WebhookSender: delivers the gateway's webhook events (webhook_events.h) to
// one URL at least once, the way a payment provider does and with its
// misbehaviour turned up: each delivery is signed afresh (Stripe-Signature,
// HMAC-SHA256 over "<t>.<payload>"), retried with exponential backoff until
// the receiver answers 2xx however long it stays down, sometimes delivered
// again after a 2xx (a duplicate), and not in order (as often as not the
// event sent is picked at random among the first kReorderWindow due ones
// rather than the oldest, and several deliveries run at once, so a refund may
// arrive before its charge).
//
// Durability: the ledger is the source. The gateway derives every event from
// its ledger at start-up and enqueues it; ids acknowledged with 2xx are
// appended to `delivered_file` (not synced: losing a line only means one
// more duplicate), and those are skipped. So an event whose charge or refund
// is in the ledger is delivered eventually, across any number of restarts.
//
// Threads: `deliveries` sender threads, each with one delivery in flight at a
// time, started by Start() and joined by Stop(). A receiver that is down or
// paused holds one thread per attempt until the timeout, so one thread alone
// falls behind a busy gateway. Enqueue() and stats() are thread-safe; each
// costs O(log pending).
#ifndef RIDE_BOOKING_FAKE_GATEWAY_WEBHOOK_SENDER_H_
#define RIDE_BOOKING_FAKE_GATEWAY_WEBHOOK_SENDER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fake_gateway/http_post.h"
#include "fake_gateway/webhook_events.h"

namespace fake_gateway {

struct WebhookSenderOptions {
  // Where events go: "http://host:port/path". Required.
  std::string url;
  // The endpoint's signing secret. Required (an unsigned event would be
  // refused anyway).
  std::string secret;
  // Ids already acknowledged, one per line; created if missing. Empty: none
  // remembered (a restart redelivers everything: duplicates only).
  std::filesystem::path delivered_file;
  // Chance that an acknowledged event is delivered once more.
  double duplicate_rate = 0.2;
  // Chance of picking a random due event (among the first kReorderWindow)
  // instead of the oldest one.
  double reorder_rate = 0.5;
  // Deliveries in flight at once (sender threads). 4: enough to keep up with
  // a chaos run's charges and refunds while the receiver is killed or paused.
  int deliveries = 4;
  // Backoff after a failed delivery: first_backoff, doubling, at most
  // max_backoff. Short, for tests and demos (Stripe's spans three days).
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{2000};
  // The longest one delivery may take (connect to status line).
  std::chrono::milliseconds timeout{2000};
  uint64_t seed = 0;
};

// "t=<timestamp>,v1=<hex HMAC-SHA256(secret, "<t>.<payload>")>".
std::string StripeSignature(std::string_view secret, std::string_view payload, int64_t timestamp);

class WebhookSender {
 public:
  // Reads delivered_file and starts the sender thread. On failure returns
  // nullptr and sets *error.
  static std::unique_ptr<WebhookSender> Start(WebhookSenderOptions options, std::string* error);
  ~WebhookSender();  // Stop()
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

  // Queues `event` unless its id was delivered or is queued already.
  void Enqueue(const WebhookEvent& event);
  // Stops delivering (pending events stay undelivered) and joins. Idempotent.
  void Stop();

  struct Stats {
    std::size_t pending = 0;    // events not yet acknowledged
    std::size_t delivered = 0;  // events acknowledged (this run)
    std::size_t attempts = 0;   // deliveries tried (this run), duplicates included
  };
  Stats stats() const;

 private:
  static constexpr std::size_t kReorderWindow = 64;
  using TimePoint = std::chrono::steady_clock::time_point;
  // Events waiting for a delivery, soonest due first (equal due times in
  // arrival order); an event in flight is in no schedule entry.
  using Schedule = std::multimap<TimePoint, std::string>;

  struct Pending {
    WebhookEvent event;
    int failures = 0;
    bool acknowledged_once = false;  // a 2xx came; this delivery is a duplicate
  };

  WebhookSender(WebhookSenderOptions options, HttpUrl url, int delivered_fd, std::set<std::string> delivered);
  void Loop();
  // Under mu_: takes the next due event off the schedule, or returns
  // schedule_.end() when none is due (the caller waits for the first entry).
  Schedule::iterator PickDue(TimePoint now);
  // Under mu_: the outcome of one delivery of `id` (reschedules or forgets).
  void Settle(const std::string& id, bool acknowledged);
  bool Roll(double rate);

  const WebhookSenderOptions options_;
  const HttpUrl url_;
  const int delivered_fd_;  // -1 without a delivered_file
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::unordered_map<std::string, Pending> pending_;  // by id; guarded by mu_
  Schedule schedule_;                                 // guarded by mu_
  std::set<std::string> known_;                       // delivered or queued ids; guarded by mu_
  Stats stats_;                                       // guarded by mu_ (pending computed)
  std::mt19937_64 dice_;                              // guarded by mu_
  bool stop_ = false;                                 // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_WEBHOOK_SENDER_H_
