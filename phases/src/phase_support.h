// What the ready payment phases (charge_phase.cc, refund_phase.cc) share:
// the memory of calls sent without a settled outcome, problem responses, and
// the rule for when a resend under the same key is safe. Private to phases/.
#ifndef PHASEKEY_PHASES_SRC_PHASE_SUPPORT_H_
#define PHASEKEY_PHASES_SRC_PHASE_SUPPORT_H_

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "phasekey/flow.h"
#include "phasekey/phases/http_client.h"
#include "phasekey/phases/provider_adapter.h"

namespace phasekey::phases::internal {

// Provider keys whose call this process sent without a settled outcome, for
// about an hour: long enough for the engine's in-request retries (seconds);
// later runs are new claims, which ctx.attempts() > 1 reveals. Thread-safe.
class SentCalls {
 public:
  void Mark(const std::string& key);
  bool Contains(const std::string& key);
  void Forget(const std::string& key);

 private:
  std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> sent_;
};

// What a payment phase keeps for its life: the adapter and client it calls
// through (borrowed), how it computes its intent, where success leads, its
// options, and the calls it sent without a settled outcome.
template <typename IntentFnT, typename OptionsT>
struct PaymentPhaseState {
  PaymentPhaseState(const ProviderAdapter& a, const HttpClient& c, IntentFnT i, RecoveryPoint n, OptionsT o)
      : adapter(&a), client(&c), intent(std::move(i)), next(n), options(std::move(o)) {}
  const ProviderAdapter* adapter;
  const HttpClient* client;
  IntentFnT intent;
  RecoveryPoint next;
  OptionsT options;
  SentCalls sent;
};

// An application/problem+json response (ProblemJsonResponse, flow.h): type
// about:blank, `title`, `status`, then the members of `extra`.
Response Problem(int status, std::string title, const nlohmann::json& extra);

// "<provider>: <code>: <message>", the parts that are present.
std::string Reason(const ProviderAdapter& adapter, const Classification& c);

// The stored 500 for a request the adapter could not build (a bug or a
// misconfiguration, not the client's fault).
PhaseResult Misconfigured(const ProviderAdapter& adapter, const Status& status);

// The phase result for a classified answer: kSucceeded -> succeeded(),
// kTerminal -> Terminal(terminal()), kRetryable -> Retry, kOutcomeUnknown ->
// OutcomeUnknown, each with Reason() as its reason. A settled outcome
// (success or terminal) drops `key` from `sent`.
PhaseResult Settle(const ProviderAdapter& adapter, const Classification& c, SentCalls& sent, const std::string& key,
                   const std::function<GoTo()>& succeeded, const std::function<Response()>& terminal);

// Whether an earlier run may have made the call: the key was claimed before,
// or this process sent it without a settled outcome.
bool MayHaveSent(const PhaseContext& ctx, SentCalls& sent, const std::string& key);

// True when a resend under the same key cannot take effect twice: the
// gateway takes a key, replays whatever the first answer was, and may still
// remember it, which the engine alone decides: ctx.send_policy() is kSend
// (the phase was first attempted less than its declared key retention minus
// RunnerOptions::provider_retention_margin ago; AddCharge and AddRefund
// declare the adapter's retention).
bool ResendIsDeduplicated(const AdapterInfo& info, const PhaseContext& ctx);

}  // namespace phasekey::phases::internal

#endif  // PHASEKEY_PHASES_SRC_PHASE_SUPPORT_H_
