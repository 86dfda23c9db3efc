#include "phasekey/webhook_endpoint.h"

#include <nlohmann/json.hpp>

#include <utility>

namespace phasekey {

WebhookEndpoint::WebhookEndpoint(WebhookEndpointOptions options, Inbox& inbox, WebhookEventParser parse)
    : options_(std::move(options)), inbox_(inbox), parse_(std::move(parse)) {
  if (!options_.clock) options_.clock = [] { return std::chrono::system_clock::now(); };
}

Response WebhookEndpoint::Problem(int status, std::string slug, std::string title, std::string detail) const {
  return ProblemResponse({status, std::move(slug), std::move(title), std::move(detail)}, options_.docs_url);
}

Response WebhookEndpoint::Handle(const HttpRequest& req) const {
  if (options_.secret.empty()) {
    return Problem(500, "internal-error", "Internal Error", "The webhook endpoint is not configured.");
  }
  const std::string* signature = req.headers.Find(kWebhookSignatureHeader);
  if (signature == nullptr || req.headers.Count(kWebhookSignatureHeader) != 1) {
    return Problem(400, "invalid-signature", "Invalid Signature", "Exactly one Stripe-Signature header is required.");
  }
  Status verified = VerifyWebhookSignature(*signature, req.body, options_.secret, options_.clock(), options_.signature);
  if (!verified.ok()) return Problem(400, "invalid-signature", "Invalid Signature", verified.message());
  Result<InboxEvent> event = parse_(req.body);
  if (!event) return Problem(400, "invalid-event", "Invalid Event", event.error().message());
  return MapReceipt(inbox_.Receive(*event));
}

Response WebhookEndpoint::MapReceipt(const Result<InboxReceipt>& receipt) const {
  if (receipt) {
    Response res;
    res.headers.Add("Content-Type", "application/json");
    res.body = nlohmann::json{{"received", true}, {"delivery", InboxDeliveryName(receipt->delivery)}}.dump();
    return res;
  }
  const Status& s = receipt.error();
  if (s.code() == StatusCode::kInvalidArgument) {
    return Problem(400, "invalid-event", "Invalid Event", s.message());
  }
  if (s.IsRetryable() || s.IsDeadlineExceeded() || s.IsOutcomeUnknown()) {
    Response res =
        Problem(503, "retry-later", "Retry Later", "The event could not be applied now. Deliver it again later.");
    res.headers.Add("Retry-After", "1");
    return res;
  }
  return Problem(500, "internal-error", "Internal Error", "The event was not recorded. Deliver it again.");
}

}  // namespace phasekey
