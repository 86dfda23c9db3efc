// RefundWith: a foreign phase that refunds a payment through any
// ProviderAdapter that has refunds (all but Stripe v2 here).
//
// The phase sends the adapter's refund with the key fitted from
// ctx.ProviderKey() (the refund phase's own key, not the charge's) and turns
// the classification into a phase result:
//   kSucceeded       GoTo next with a RefundOutcome (payment_outcome.h)
//   kTerminal        Terminal, stored: 502 "Refund refused by the provider"
//                    (RefundOptions::terminal_response to change it)
//   kRetryable       Retry
//   kOutcomeUnknown  OutcomeUnknown (re-run with the same key)
//
// A refund moves money like a charge, and gateways have no status query for
// refunds by our reference. So when an earlier run may have sent this
// refund (the key was claimed before, or this process sent it without a
// settled outcome), the phase sends it again only if the resend is
// deduplicated: the gateway takes a key, replays every answer, and still
// remembers it (charge_phase.h; the engine's SendPolicy decides the last,
// from the retention AddRefund declares). Otherwise it refuses with a stored 500 for
// an operator, because refunding again could refund twice. For gateways
// without keys that means any re-run after a lost answer stops there.
#ifndef PHASEKEY_PHASES_REFUND_PHASE_H_
#define PHASEKEY_PHASES_REFUND_PHASE_H_

#include <chrono>
#include <functional>
#include <string>

#include "phasekey/flow.h"
#include "phasekey/phases/http_client.h"
#include "phasekey/phases/provider_adapter.h"

namespace phasekey::phases {

// Computes the refund from the request and earlier outcomes (typically the
// charge phase's payment_id, via ChargeOutcome::At). Pure and repeatable, like
// IntentFn; exceptions it throws are an unclassified failure.
using RefundIntentFn = std::function<RefundIntent(const PhaseContext& ctx)>;

// How RefundWith times its call and answers a terminal classification;
// every default is explained below.
struct RefundOptions {
  // The longest the refund call may take; also the phase's declared timeout.
  std::chrono::milliseconds call_timeout{10000};
  // Builds the stored response for a kTerminal classification. Default: 502
  // application/problem+json naming the provider, its code and message.
  std::function<Response(const ProviderAdapter& adapter, const Classification& c)> terminal_response;
};

// The phase. `adapter` and `client` are borrowed and must outlive every use
// of the returned function. Throws std::invalid_argument at construction
// when the adapter has no refund (a flow that could never refund is a
// programming error, better found before the first request). Thread-safe.
ForeignPhase RefundWith(const ProviderAdapter& adapter, const HttpClient& client, RefundIntentFn refund,
                        RecoveryPoint next, RefundOptions options = {});

// builder.Foreign(from, phase, RefundWith(...), {next}, call_timeout, the
// adapter's key retention (seconds::max() for gateways without keys)).
Flow::Builder& AddRefund(Flow::Builder& builder, RecoveryPoint from, std::string phase, const ProviderAdapter& adapter,
                         const HttpClient& client, RefundIntentFn refund, RecoveryPoint next,
                         RefundOptions options = {});

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_REFUND_PHASE_H_
