// WebhookEndpoint: one HTTP webhook route in front of an Inbox, without any
// transport (mount it on a plain route of phasekey/tools/http_server.h). For each
// delivery: verify the signature over the body's exact bytes, parse the
// event (the provider's format: a parser from phases/), Inbox::Receive, and
// map the outcome for the sender, whose contract is "2xx means stop":
//   200 received          applied, duplicate or parked: {"received":true,
//                         "delivery":"applied"|"duplicate"|"parked"}
//   400 invalid-signature  missing, malformed, stale or wrong signature;
//                         nothing recorded
//   400 invalid-event     the body is not an event of the provider's format
//   503 retry-later       the handler asked for a retry (or threw), or a
//                         transient database failure: deliver again
//                         (Retry-After)
//   500 internal-error    any other failure (a missing secret included);
//                         nothing acknowledged, so the sender retries too
// Problem bodies are RFC 9457 (phasekey/http.h ProblemResponse); 5xx details
// never name internals.
//
// Thread-safety: Handle() is thread-safe (the Inbox's is).
#ifndef PHASEKEY_WEBHOOK_ENDPOINT_H_
#define PHASEKEY_WEBHOOK_ENDPOINT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "phasekey/http.h"
#include "phasekey/inbox.h"
#include "phasekey/status.h"

namespace phasekey {

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

// Turns a verified body into an event; InvalidArgument (its message shown
// to the sender) when it is not one. Must be thread-safe.
using WebhookEventParser = std::function<Result<InboxEvent>(std::string_view body)>;

// The endpoint's secret and how it checks signatures; only `secret` is
// required.
struct WebhookEndpointOptions {
  // The endpoint's signing secret, shared with the sender. Required: an
  // empty secret answers every delivery 500 (refusing beats accepting
  // unsigned events).
  std::string secret;
  // How signatures are checked (the timestamp tolerance).
  WebhookSignatureOptions signature;
  // Problem "type" URLs are docs_url + "#" + slug.
  std::string docs_url = "https://phasekey.dev/docs/inbox";
  // Time source for the tolerance window; null means system_clock::now.
  std::function<std::chrono::system_clock::time_point()> clock;
};

// One webhook route: verify, parse, Inbox::Receive, answer (see the file
// comment). Holds no connection of its own.
class WebhookEndpoint {
 public:
  // `inbox` must outlive the endpoint.
  WebhookEndpoint(WebhookEndpointOptions options, Inbox& inbox, WebhookEventParser parse);

  // Answers one delivery (the method and target are the caller's routing
  // business; only the signature header and the body are read).
  Response Handle(const HttpRequest& req) const;

 private:
  Response Problem(int status, std::string slug, std::string title, std::string detail) const;
  Response MapReceipt(const Result<InboxReceipt>& receipt) const;

  WebhookEndpointOptions options_;
  Inbox& inbox_;
  WebhookEventParser parse_;
};

}  // namespace phasekey

#endif  // PHASEKEY_WEBHOOK_ENDPOINT_H_
