#include "phase_support.h"

#include <iterator>
#include <utility>

namespace phasekey::phases::internal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kSentMemory = std::chrono::hours(1);

}  // namespace

void SentCalls::Mark(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  for (auto it = sent_.begin(); it != sent_.end();) {
    it = now - it->second > kSentMemory ? sent_.erase(it) : std::next(it);
  }
  sent_[key] = now;
}

bool SentCalls::Contains(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return sent_.count(key) > 0;
}

void SentCalls::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  sent_.erase(key);
}

Response Problem(int status, std::string title, const nlohmann::json& extra) {
  return ProblemJsonResponse(status, "about:blank", title, extra);
}

std::string Reason(const ProviderAdapter& adapter, const Classification& c) {
  std::string reason = adapter.name();
  if (!c.code.empty()) reason += ": " + c.code;
  if (!c.message.empty()) reason += ": " + c.message;
  return reason;
}

PhaseResult Misconfigured(const ProviderAdapter& adapter, const Status& status) {
  return Terminal(Problem(500, "Payment request invalid", {{"provider", adapter.name()}, {"detail", status.message()}}),
                  adapter.name() + ": cannot build the request: " + status.ToString());
}

PhaseResult Settle(const ProviderAdapter& adapter, const Classification& c, SentCalls& sent, const std::string& key,
                   const std::function<GoTo()>& succeeded, const std::function<Response()>& terminal) {
  switch (c.kind) {
    case Classification::Kind::kSucceeded: sent.Forget(key); return succeeded();
    case Classification::Kind::kTerminal: sent.Forget(key); return Terminal(terminal(), Reason(adapter, c));
    case Classification::Kind::kRetryable: return Retry(Reason(adapter, c));
    case Classification::Kind::kOutcomeUnknown: break;
  }
  return OutcomeUnknown(Reason(adapter, c));
}

bool MayHaveSent(const PhaseContext& ctx, SentCalls& sent, const std::string& key) {
  return ctx.attempts() > 1 || sent.Contains(key);
}

bool ResendIsDeduplicated(const AdapterInfo& info, const PhaseContext& ctx) {
  // Whether the provider may have forgotten the key is the engine's word
  // alone (SendPolicy, from the retention the phase declared); the adapter
  // says whether it takes a key and replays every answer.
  return info.placement != KeyPlacement::kNone && info.key_retention.count() > 0 && info.key_replays_all_answers &&
         ctx.send_policy() == SendPolicy::kSend;
}

}  // namespace phasekey::phases::internal
