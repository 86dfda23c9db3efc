#include "phasekey/phases/charge_phase.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "phase_support.h"
#include "phasekey/phases/payment_outcome.h"

namespace phasekey::phases {
namespace {

using internal::Misconfigured;
using internal::Problem;

using ChargeState = internal::PaymentPhaseState<IntentFn, ChargeOptions>;

PhaseResult Finish(ChargeState& s, const std::string& key, const std::string& reference, const Classification& c,
                   bool reconciled) {
  const ProviderAdapter& adapter = *s.adapter;
  return internal::Settle(
      adapter, c, s.sent, key,
      [&] {
        return GoTo{s.next, ChargeOutcome{adapter.name(), c.payment_id, c.status, reference, reconciled}.ToJson()};
      },
      [&] {
        const auto& make = s.options.terminal_response;
        return make ? make(adapter, c) : DefaultTerminalResponse(adapter, c);
      });
}

PhaseResult Unverifiable(const ProviderAdapter& adapter) {
  return NeedsOperator(adapter.name() +
                       ": an earlier attempt may have charged, the provider may no longer recognise the key, and "
                       "it has no status query; not charging again");
}

// Whether the phase may first have been attempted less than the adapter's
// lookup window ago, so that a lookup may not see a charge it made.
bool InsideLookupWindow(const AdapterInfo& info, const PhaseContext& ctx) {
  return std::chrono::milliseconds(ctx.first_attempt_age()) < info.lookup_window;
}

// Reconciles when an earlier run may have charged, or the engine says the
// provider may have forgotten the key (SendPolicy). nullopt: go on and
// charge.
std::optional<PhaseResult> Reconcile(ChargeState& s, const PhaseContext& ctx, const std::string& key,
                                     const std::string& reference) {
  const ProviderAdapter& adapter = *s.adapter;
  const AdapterInfo& info = adapter.info();
  const SendPolicy policy = ctx.send_policy();
  if (policy == SendPolicy::kSend && !internal::MayHaveSent(ctx, s.sent, key)) return std::nullopt;
  const bool deduplicated = internal::ResendIsDeduplicated(info, ctx);
  if (!info.has_lookup) {
    if (deduplicated) return std::nullopt;
    return Unverifiable(adapter);
  }
  Result<ProviderRequest> request = adapter.BuildLookup(reference);
  if (!request) return Misconfigured(adapter, request.error());
  request->resend_if_connection_stale = true;  // a read
  const Lookup lookup = adapter.ParseLookup(s.client->Send(adapter.base_url(), *request, s.options.call_timeout));
  if (lookup.kind == Lookup::Kind::kFound && (lookup.payment.kind == Classification::Kind::kSucceeded ||
                                              lookup.payment.kind == Classification::Kind::kTerminal)) {
    return Finish(s, key, reference, lookup.payment, /*reconciled=*/true);
  }
  if (lookup.kind == Lookup::Kind::kNotFound) {
    if (InsideLookupWindow(info, ctx)) {
      // The lookup may not see the charge yet: "not found" proves nothing.
      // Only a key that makes the resend safe may send; else look again.
      if (deduplicated) return std::nullopt;
      return Retry(adapter.name() + ": not found, but the lookup may lag " +
                   std::to_string(info.lookup_window.count()) + " ms behind a charge first attempted " +
                   std::to_string(ctx.first_attempt_age().count()) + " s ago; looking again later, not charging");
    }
    // Past the give-up time nothing new is sent: not there means never charged.
    if (policy == SendPolicy::kLookUpOnly) return NotTaken(adapter.name() + ": " + lookup.message);
    return std::nullopt;
  }
  if (deduplicated) return std::nullopt;  // inconclusive, but the key makes the resend safe
  return Retry(adapter.name() + ": reconciliation inconclusive, not charging: " + lookup.message);
}

PhaseResult RunCharge(ChargeState& s, const PhaseContext& ctx) {
  using Clock = std::chrono::steady_clock;
  const ProviderAdapter& adapter = *s.adapter;
  const Clock::time_point deadline = Clock::now() + ChargePhaseTimeout(adapter, s.options);
  const std::string key = ctx.ProviderKey();
  const std::string reference = adapter.ReferenceFor(key);
  if (auto settled = Reconcile(s, ctx, key, reference)) return std::move(*settled);
  Result<ProviderRequest> request = adapter.BuildCharge(s.intent(ctx), key);
  if (!request) return Misconfigured(adapter, request.error());
  // The provider key answers a repeat as the first only when it deduplicates.
  request->resend_if_connection_stale = internal::ResendIsDeduplicated(adapter.info(), ctx);
  // The charge has what the lookup (if any) left of the phase's budget.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return Retry(adapter.name() + ": the lookup used the phase's time; not charging now");
  const ProviderAnswer answer = s.client->Send(adapter.base_url(), *request, left);
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
  const Flow::ForeignOptions foreign{ChargePhaseTimeout(adapter, options), ChargePhaseRetention(adapter),
                                     adapter.info().has_lookup};
  return builder.Foreign(from, std::move(phase),
                         ChargeWith(adapter, client, std::move(intent), next, std::move(options)), {next}, foreign);
}

}  // namespace phasekey::phases
