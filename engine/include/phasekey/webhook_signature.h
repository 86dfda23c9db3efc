// Webhook signatures in Stripe's scheme: the sender puts
//   Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=<hex>...]
// on each delivery, the HMAC keyed with the endpoint's secret over
// "<t>.<payload>". Several v1 entries let a sender sign with an old and a new
// secret during a rotation; any one matching is enough. The timestamp bounds
// replays: a signature older (or newer) than the tolerance is refused.
//
// Check the signature before anything of the event is recorded, over the
// body's exact bytes (not a re-serialization).
//
// Thread-safety: every function is thread-safe.
#ifndef PHASEKEY_WEBHOOK_SIGNATURE_H_
#define PHASEKEY_WEBHOOK_SIGNATURE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "phasekey/status.h"

namespace phasekey {

// How VerifyWebhookSignature() judges a signature's age.
struct WebhookSignatureOptions {
  // How far the signature's timestamp may be from now, either way. 300 s is
  // Stripe's default: wide enough for a sender's clock skew and a slow
  // delivery, narrow enough that a captured request cannot be replayed later.
  std::chrono::seconds tolerance{300};
};

// The header field's name.
inline constexpr std::string_view kWebhookSignatureHeader = "Stripe-Signature";

// The header value "t=<timestamp>,v1=<hex>" signing `payload` with `secret`
// at `timestamp` (Unix seconds). For senders (tests, fake gateways).
std::string SignWebhook(std::string_view secret, std::string_view payload, std::int64_t timestamp);

// OK when `header` carries a v1 signature of `payload` under `secret` whose
// timestamp is within options.tolerance of `now`. InvalidArgument otherwise,
// with a one-line reason fit for the sender (never the expected signature):
// a malformed header, no v1 entry, a stale or future timestamp, or no
// matching signature. Comparisons are constant-time (CRYPTO_memcmp). An
// empty secret is refused (FailedPrecondition): it would accept anyone's.
Status VerifyWebhookSignature(std::string_view header, std::string_view payload, std::string_view secret,
                              std::chrono::system_clock::time_point now, const WebhookSignatureOptions& options = {});

}  // namespace phasekey

#endif  // PHASEKEY_WEBHOOK_SIGNATURE_H_
