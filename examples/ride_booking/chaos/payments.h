// The chaos demo's webhook side: an operator refunding charges at the gateway
// while the run goes on (as from a dashboard), and the check that the
// service's payment states (ride_payments, fed by the gateway's webhook
// events through the inbox) end up matching the gateway's ledger, although
// the deliveries met a service killed and restarted, duplicates and
// reordering (fake_gateway's WebhookSender).
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PAYMENTS_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PAYMENTS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "phasekey/status.h"

namespace ride_booking {

// Refunds a share of the charges in the gateway's ledger, each at most once
// (POST /v1/refunds with Idempotency-Key "chaos-refund-<charge id>",
// retried through gateway faults). Runs its own thread from construction to
// Stop(); looks at the ledger every `poll`.
class ChaosRefunder {
 public:
  // `share`: the fraction of charges refunded, drawn with `seed`;
  // `gateway_ca`: the CA to reach it over https with ("": plain http);
  // `api_secret`: the gateway's API credential (sent as a Bearer token).
  ChaosRefunder(int gateway_port, std::string gateway_ca, std::string api_secret, double share, unsigned seed,
                std::chrono::milliseconds poll = std::chrono::milliseconds(200));
  ~ChaosRefunder();  // Stop()
  ChaosRefunder(const ChaosRefunder&) = delete;
  ChaosRefunder& operator=(const ChaosRefunder&) = delete;

  // Finishes the refund in progress and joins. Idempotent.
  void Stop();
  // Refunds the gateway confirmed (200), this run.
  long long refunds() const { return refunds_.load(); }

 private:
  void Loop(double share, unsigned seed, std::chrono::milliseconds poll);
  bool Refund(const std::string& charge_id);

  const int gateway_port_;
  const std::string gateway_ca_;
  const std::string api_secret_;
  std::atomic<long long> refunds_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::thread thread_;
};

struct PaymentStateCheck {
  long long charges = 0;                // charges in the ledger
  long long refunded = 0;               // of which refunded
  long long matched = 0;                // whose ride_payments state matches
  double waited_s = 0;                  // until they all matched (or progress stopped)
  std::vector<std::string> mismatches;  // one line each, at the last poll
};

// Polls every 250 ms until every charge of `ledger_json` (the gateway's GET
// /_ledger) has its state in ride_payments: "refunded" when the ledger says
// refunded, else "succeeded". Waits as long as the deliveries make progress
// (fewer mismatches than at any earlier poll) and gives up once `stall` passes
// without any: a long run leaves a backlog that drains at the sender's pace,
// while a lost delivery never drains. Database errors and an unparsable
// ledger are errors; mismatches left when it gives up are findings.
phasekey::Result<PaymentStateCheck> WaitForPaymentStates(const std::string& db_url, const std::string& ledger_json,
                                                         std::chrono::milliseconds stall);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PAYMENTS_H_
