#include "phasekey/phases/charge_phase.h"

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace phasekey::phases {
namespace {

using Clock = std::chrono::steady_clock;

// How long this process remembers that it sent a charge whose outcome is not
// settled. It only has to cover the engine's in-request retries (seconds);
// later runs are new claims, and ctx.attempts() > 1 covers them.
constexpr auto kSentMemory = std::chrono::hours(1);

// Provider keys whose charge this process sent without a settled outcome.
// Thread-safe.
class SentCharges {
 public:
  void Mark(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    for (auto it = sent_.begin(); it != sent_.end();) {
      it = now - it->second > kSentMemory ? sent_.erase(it) : std::next(it);
    }
    sent_[key] = now;
  }
  bool Contains(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return sent_.count(key) > 0;
  }
  void Forget(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.erase(key);
  }

 private:
  std::mutex mu_;
  std::map<std::string, Clock::time_point> sent_;
};

struct ChargeState {
  ChargeState(const ProviderAdapter& a, const HttpClient& c, IntentFn i, RecoveryPoint n, ChargeOptions o)
      : adapter(&a), client(&c), intent(std::move(i)), next(n), options(std::move(o)) {}
  const ProviderAdapter* adapter;
  const HttpClient* client;
  IntentFn intent;
  RecoveryPoint next;
  ChargeOptions options;
  SentCharges sent;
};

Response Problem(int status, std::string title, const nlohmann::json& extra) {
  nlohmann::json body = {{"type", "about:blank"}, {"title", std::move(title)}, {"status", status}};
  body.update(extra);
  return Response{status, {{"Content-Type", "application/problem+json"}}, body.dump()};
}

std::string Reason(const ProviderAdapter& adapter, const Classification& c) {
  std::string reason = adapter.name();
  if (!c.code.empty()) reason += ": " + c.code;
  if (!c.message.empty()) reason += ": " + c.message;
  return reason;
}

PhaseResult Finish(ChargeState& s, const std::string& key, const std::string& reference, const Classification& c,
                   bool reconciled) {
  const ProviderAdapter& adapter = *s.adapter;
  switch (c.kind) {
    case Classification::Kind::kSucceeded:
      s.sent.Forget(key);
      return GoTo{s.next,
                  {{"provider", adapter.name()},
                   {"payment_id", c.payment_id},
                   {"status", c.status},
                   {"reference", reference},
                   {"reconciled", reconciled}}};
    case Classification::Kind::kTerminal: {
      s.sent.Forget(key);
      const auto& make = s.options.terminal_response;
      return Terminal(make ? make(adapter, c) : DefaultTerminalResponse(adapter, c), Reason(adapter, c));
    }
    case Classification::Kind::kRetryable:
      return Retry(Reason(adapter, c));
    case Classification::Kind::kOutcomeUnknown:
      return OutcomeUnknown(Reason(adapter, c));
  }
  return OutcomeUnknown(Reason(adapter, c));
}

PhaseResult Misconfigured(const ProviderAdapter& adapter, const Status& status) {
  return Terminal(Problem(500, "Payment request invalid", {{"provider", adapter.name()}, {"detail", status.message()}}),
                  adapter.name() + ": cannot build the request: " + status.ToString());
}

bool KeyMayHaveExpired(const AdapterInfo& info, const PhaseContext& ctx, const ChargeOptions& options) {
  if (info.placement == KeyPlacement::kNone || info.key_retention.count() <= 0) return true;
  if (info.key_retention == std::chrono::seconds::max()) return false;
  return ctx.key_age() + options.retention_margin >= info.key_retention;
}

// True when a resend under the same key cannot charge twice: the gateway
// takes a key, still remembers it, and deduplicates whatever the first
// answer was.
bool ResendIsDeduplicated(const AdapterInfo& info, const PhaseContext& ctx, const ChargeOptions& options) {
  return info.placement != KeyPlacement::kNone && info.key_replays_all_answers &&
         !KeyMayHaveExpired(info, ctx, options);
}

PhaseResult Unverifiable(const ProviderAdapter& adapter) {
  return Terminal(Problem(500, "Payment outcome unverifiable",
                          {{"provider", adapter.name()},
                           {"detail",
                            "An earlier attempt may have charged, the provider may no longer deduplicate "
                            "it, and it has no status query. Do not retry; an operator must reconcile."}}),
                  adapter.name() + ": an earlier attempt may have charged and cannot be verified; not charging again");
}

// Reconciles when an earlier run may have charged. nullopt: go on and charge.
std::optional<PhaseResult> Reconcile(ChargeState& s, const PhaseContext& ctx, const std::string& key,
                                     const std::string& reference) {
  const ProviderAdapter& adapter = *s.adapter;
  const AdapterInfo& info = adapter.info();
  if (ctx.attempts() <= 1 && !s.sent.Contains(key)) return std::nullopt;
  const bool deduplicated = ResendIsDeduplicated(info, ctx, s.options);
  if (!info.has_lookup) {
    if (deduplicated) return std::nullopt;
    return Unverifiable(adapter);
  }
  Result<ProviderRequest> request = adapter.BuildLookup(reference);
  if (!request) return Misconfigured(adapter, request.error());
  const Lookup lookup = adapter.ParseLookup(s.client->Send(adapter.base_url(), *request, s.options.call_timeout));
  if (lookup.kind == Lookup::Kind::kNotFound) return std::nullopt;
  if (lookup.kind == Lookup::Kind::kFound && (lookup.payment.kind == Classification::Kind::kSucceeded ||
                                              lookup.payment.kind == Classification::Kind::kTerminal)) {
    return Finish(s, key, reference, lookup.payment, /*reconciled=*/true);
  }
  if (deduplicated) return std::nullopt;  // inconclusive, but the key makes the resend safe
  return Retry(adapter.name() + ": reconciliation inconclusive, not charging: " + lookup.message);
}

PhaseResult RunCharge(ChargeState& s, const PhaseContext& ctx) {
  const ProviderAdapter& adapter = *s.adapter;
  const std::string key = ctx.ProviderKey();
  const std::string reference = adapter.ReferenceFor(key);
  if (auto settled = Reconcile(s, ctx, key, reference)) return std::move(*settled);
  Result<ProviderRequest> request = adapter.BuildCharge(s.intent(ctx), key);
  if (!request) return Misconfigured(adapter, request.error());
  const ProviderAnswer answer = s.client->Send(adapter.base_url(), *request, s.options.call_timeout);
  if (answer.transport != ProviderAnswer::Transport::kNotSent) s.sent.Mark(key);
  return Finish(s, key, reference, adapter.Classify(answer), /*reconciled=*/false);
}

}  // namespace

Response DefaultTerminalResponse(const ProviderAdapter& adapter, const Classification& c) {
  const nlohmann::json extra = {{"provider", adapter.name()}, {"code", c.code}, {"detail", c.message}};
  if (c.declined) return Problem(402, "Payment declined", extra);
  return Problem(502, "Payment provider refused the request", extra);
}

ForeignPhase ChargeWith(const ProviderAdapter& adapter, const HttpClient& client, IntentFn intent, RecoveryPoint next,
                        ChargeOptions options) {
  auto state = std::make_shared<ChargeState>(adapter, client, std::move(intent), next, std::move(options));
  return [state](const PhaseContext& ctx) { return RunCharge(*state, ctx); };
}

std::chrono::milliseconds ChargePhaseTimeout(const ProviderAdapter& adapter, const ChargeOptions& options) {
  return adapter.info().has_lookup ? 2 * options.call_timeout : options.call_timeout;
}

std::chrono::seconds ChargePhaseRetention(const ProviderAdapter& adapter) {
  const AdapterInfo& info = adapter.info();
  if (info.placement == KeyPlacement::kNone) return std::chrono::seconds::max();
  return info.key_retention;
}

Flow::Builder& AddCharge(Flow::Builder& builder, RecoveryPoint from, std::string phase, const ProviderAdapter& adapter,
                         const HttpClient& client, IntentFn intent, RecoveryPoint next, ChargeOptions options) {
  const auto timeout = ChargePhaseTimeout(adapter, options);
  return builder.Foreign(from, std::move(phase),
                         ChargeWith(adapter, client, std::move(intent), next, std::move(options)), {next}, timeout,
                         ChargePhaseRetention(adapter));
}

}  // namespace phasekey::phases
