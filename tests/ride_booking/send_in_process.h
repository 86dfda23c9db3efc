// Sends a phases/ adapter's request to a fake_gateway Gateway in process, as
// the HTTP client would over the network. Header-only; for the tests of
// tests/ride_booking that check adapters against the gateway's answers.
#ifndef PHASEKEY_TESTS_RIDE_BOOKING_SEND_IN_PROCESS_H_
#define PHASEKEY_TESTS_RIDE_BOOKING_SEND_IN_PROCESS_H_

#include "fake_gateway/gateway.h"
#include "phasekey/phases/provider_adapter.h"

namespace fake_gateway {

// The gateway's answer to `request`; a dropped connection (the drop fault)
// reads as kSentNoAnswer.
inline phasekey::phases::ProviderAnswer SendInProcess(Gateway& gateway,
                                                      const phasekey::phases::ProviderRequest& request) {
  Headers headers(request.headers.begin(), request.headers.end());
  if (!request.content_type.empty()) headers.emplace_back("Content-Type", request.content_type);
  GatewayResponse response = gateway.Handle(request.method, request.path, headers, request.body);
  phasekey::phases::ProviderAnswer answer;
  answer.transport = response.drop_connection ? phasekey::phases::ProviderAnswer::Transport::kSentNoAnswer
                                              : phasekey::phases::ProviderAnswer::Transport::kAnswered;
  answer.status = response.status;
  answer.headers = std::move(response.headers);
  answer.body = std::move(response.body);
  return answer;
}

}  // namespace fake_gateway

#endif  // PHASEKEY_TESTS_RIDE_BOOKING_SEND_IN_PROCESS_H_
