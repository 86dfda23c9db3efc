#include "phasekey/phases/refund_phase.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "phase_support.h"
#include "phasekey/phases/charge_phase.h"
#include "phasekey/phases/payment_outcome.h"

namespace phasekey::phases {
namespace {

using internal::Problem;

using RefundState = internal::PaymentPhaseState<RefundIntentFn, RefundOptions>;

Response DefaultRefundRefusal(const ProviderAdapter& adapter, const Classification& c) {
  return Problem(502, "Refund refused by the provider",
                 {{"provider", adapter.name()}, {"code", c.code}, {"detail", c.message}});
}

PhaseResult Unverifiable(const ProviderAdapter& adapter) {
  return NeedsOperator(adapter.name() +
                       ": an earlier attempt may have refunded and the provider may no longer recognise the key; "
                       "not refunding again");
}

PhaseResult Finish(RefundState& s, const std::string& key, const Classification& c) {
  const ProviderAdapter& adapter = *s.adapter;
  return internal::Settle(
      adapter, c, s.sent, key,
      [&] {
        return GoTo{s.next, RefundOutcome{adapter.name(), c.payment_id, c.status}.ToJson()};
      },
      [&] {
        const auto& make = s.options.terminal_response;
        return make ? make(adapter, c) : DefaultRefundRefusal(adapter, c);
      });
}

PhaseResult RunRefund(RefundState& s, const PhaseContext& ctx) {
  const ProviderAdapter& adapter = *s.adapter;
  const std::string key = ctx.ProviderKey();
  if (internal::MayHaveSent(ctx, s.sent, key) && !internal::ResendIsDeduplicated(adapter.info(), ctx)) {
    return Unverifiable(adapter);
  }
  Result<ProviderRequest> request = adapter.BuildRefund(s.intent(ctx), key);
  if (!request) return internal::Misconfigured(adapter, request.error());
  request->resend_if_connection_stale = internal::ResendIsDeduplicated(adapter.info(), ctx);
  const ProviderAnswer answer = s.client->Send(adapter.base_url(), *request, s.options.call_timeout);
  if (answer.transport != ProviderAnswer::Transport::kNotSent) s.sent.Mark(key);
  return Finish(s, key, adapter.ClassifyRefund(answer));
}

// Whether the adapter builds refunds at all: its BuildRefund refuses with
// FailedPrecondition when it has none, whatever the intent.
bool HasRefund(const ProviderAdapter& adapter) {
  const RefundIntent probe{"pay_probe", 100, "usd", ""};
  const Result<ProviderRequest> r = adapter.BuildRefund(probe, "probe:refund");
  return r.has_value() || r.error().code() != StatusCode::kFailedPrecondition;
}

}  // namespace

ForeignPhase RefundWith(const ProviderAdapter& adapter, const HttpClient& client, RefundIntentFn refund,
                        RecoveryPoint next, RefundOptions options) {
  if (!HasRefund(adapter)) throw std::invalid_argument(adapter.name() + " has no refund");
  auto state = std::make_shared<RefundState>(adapter, client, std::move(refund), next, std::move(options));
  return [state](const PhaseContext& ctx) { return RunRefund(*state, ctx); };
}

Flow::Builder& AddRefund(Flow::Builder& builder, RecoveryPoint from, std::string phase, const ProviderAdapter& adapter,
                         const HttpClient& client, RefundIntentFn refund, RecoveryPoint next, RefundOptions options) {
  const auto timeout = options.call_timeout;
  return builder.Foreign(from, std::move(phase),
                         RefundWith(adapter, client, std::move(refund), next, std::move(options)), {next}, timeout,
                         ChargePhaseRetention(adapter));
}

}  // namespace phasekey::phases
