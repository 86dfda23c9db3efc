// ChargeWith: a foreign phase that charges through any ProviderAdapter.
//
// The phase sends the adapter's charge with the key fitted from
// ctx.ProviderKey() and turns the classification into a phase result:
//   kSucceeded       GoTo next with a ChargeOutcome (payment_outcome.h;
//                    reconciled false), which later phases read with
//                    ChargeOutcome::At(ctx, next)
//   kTerminal        Terminal, stored: 402 for a decline, 502 when the gateway
//                    refused our request (ChargeOptions::terminal_response)
//   kRetryable       Retry
//   kOutcomeUnknown  OutcomeUnknown (re-run with the same key)
//
// Reconciliation. The phase may run again after an earlier run sent the
// charge (a lost answer, a crash, a takeover). "May have charged" means: the
// key has been claimed before (ctx.attempts() > 1), or an earlier run in this
// process sent a charge for this provider key whose outcome is not settled
// (an in-request retry after OutcomeUnknown). Then, before charging:
//   - with a lookup (the status query by the merchant reference derived from
//     the provider key): found and paid, GoTo next with that payment
//     (reconciled true); found and declined, the decline, as the gateway
//     would have replayed it; not found, charge, but only once the lookup's
//     consistency window (AdapterInfo::lookup_window) has passed since the
//     phase may first have been attempted (ctx.first_attempt_age()): inside
//     it the lookup may not see a charge yet, so "not found" is inconclusive
//     and the phase charges only if the resend is deduplicated (below), and
//     otherwise returns Retry to look again later (under kLookUpOnly too,
//     instead of NotTaken). Inconclusive (the query
//     failed, a payment is still pending): Retry and never charge, unless
//     the resend is deduplicated anyway (below). For gateways without keys
//     (HyperPay, PayTabs, Amazon Payment Services) this is what keeps the
//     charge single.
//   - without a lookup: charge again only if the resend is deduplicated;
//     otherwise refuse with a stored 500 for an operator, because charging
//     could charge twice.
// A resend is deduplicated when the gateway takes a key, replays whatever the
// first answer was (AdapterInfo::key_replays_all_answers; not Checkout.com,
// which keeps only 2xx), and may still remember it. Whether it may still
// remember it is the engine's word, not the phase's: ctx.send_policy() is
// kSend (SendPolicy, flow.h: the phase was first attempted less than its
// declared key retention minus RunnerOptions::provider_retention_margin
// ago). So declare the phase with ChargePhaseRetention (AddCharge does).
#ifndef PHASEKEY_PHASES_CHARGE_PHASE_H_
#define PHASEKEY_PHASES_CHARGE_PHASE_H_

#include <chrono>
#include <functional>
#include <string>

#include "phasekey/flow.h"
#include "phasekey/phases/http_client.h"
#include "phasekey/phases/provider_adapter.h"

namespace phasekey::phases {

// Computes the intent from the request (pure; may run several times and must
// give the same intent each time, or keyed gateways refuse the retry). It
// runs only when a charge is about to be sent. Exceptions it throws reach the
// engine, which treats them as an unclassified failure.
using IntentFn = std::function<PaymentIntent(const PhaseContext& ctx)>;

// How ChargeWith times its calls and answers a terminal classification;
// every default is explained below.
struct ChargeOptions {
  // The longest a lookup may take. The charge gets what is left of the
  // phase's whole budget (ChargePhaseTimeout): all of it when the run did
  // not look up first.
  std::chrono::milliseconds call_timeout{10000};
  // Builds the stored response for a kTerminal classification. Default:
  // DefaultTerminalResponse.
  std::function<Response(const ProviderAdapter& adapter, const Classification& c)> terminal_response;
};

// 402 application/problem+json for a decline, 502 for a refused request; the
// body names the provider and its code and message.
Response DefaultTerminalResponse(const ProviderAdapter& adapter, const Classification& c);

// The phase. `adapter` and `client` are borrowed and must outlive every use
// of the returned function (normally: the flow). Thread-safe.
ForeignPhase ChargeWith(const ProviderAdapter& adapter, const HttpClient& client, IntentFn intent, RecoveryPoint next,
                        ChargeOptions options = {});

// The timeout to declare for the phase, which bounds every run of it: one
// call_timeout, or two when the adapter may look up before charging.
std::chrono::milliseconds ChargePhaseTimeout(const ProviderAdapter& adapter, const ChargeOptions& options);

// The key retention to declare for the phase: the adapter's retention for
// keyed gateways (the re-drive horizon must stay below it); seconds::max()
// for gateways without keys, where every re-run reconciles first, so re-driving
// at any age is safe.
std::chrono::seconds ChargePhaseRetention(const ProviderAdapter& adapter);

// builder.Foreign(from, phase, ChargeWith(...), {next}, ChargePhaseTimeout,
// ChargePhaseRetention).
Flow::Builder& AddCharge(Flow::Builder& builder, RecoveryPoint from, std::string phase, const ProviderAdapter& adapter,
                         const HttpClient& client, IntentFn intent, RecoveryPoint next, ChargeOptions options = {});

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_CHARGE_PHASE_H_
