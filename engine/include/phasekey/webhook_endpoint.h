// WebhookEndpoint: one HTTP webhook route in front of an Inbox, without any
// transport (mount it on a plain route of phasekey/http_server.h). For each
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
#include <functional>
#include <string>
#include <string_view>

#include "phasekey/http.h"
#include "phasekey/inbox.h"
#include "phasekey/status.h"
#include "phasekey/webhook_signature.h"

namespace phasekey {

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
  HttpResponse Handle(const HttpRequest& req) const;

 private:
  HttpResponse Problem(int status, std::string slug, std::string title, std::string detail) const;
  HttpResponse MapReceipt(const Result<InboxReceipt>& receipt) const;

  WebhookEndpointOptions options_;
  Inbox& inbox_;
  WebhookEventParser parse_;
};

}  // namespace phasekey

#endif  // PHASEKEY_WEBHOOK_ENDPOINT_H_
