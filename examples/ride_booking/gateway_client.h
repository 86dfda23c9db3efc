// GatewayClient: charges cards through a Stripe-like charges API
// (fake_gateway here) and classifies every answer as a phase result:
//
//   200                    the charge: GoTo charge_created with its id
//   402 card_error         a decline: Terminal, a stored 402
//   409 key in use         the provider still runs our first attempt: Retry
//   429, 5xx               Retry (nothing was charged under the key)
//   other 4xx              Terminal: a stored 502, the provider refused us
//   connect failure        Retry (the request never left)
//   lost after sending     OutcomeUnknown: re-run with the same key
//
// Thread-safe: each call opens its own connection. Every call ends within
// the timeout given at construction: one deadline bounds name resolution,
// connect, write and read together.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_GATEWAY_CLIENT_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_GATEWAY_CLIENT_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "phasekey/flow.h"

namespace ride_booking {

struct ChargeRequest {
  long long amount = 0;  // minor units
  std::string currency;
  std::string customer;
  std::string description;
  std::string idempotency_key;  // the provider key (PhaseContext::ProviderKey)
};

// Resolves a host name to IP address literals ("127.0.0.1", "::1"), in the
// order to try them; may block and may throw. GatewayClient runs it on a
// detached thread of its own and stops waiting at the call's deadline, so a
// slow name server cannot hold a call past its timeout; the function (a copy
// of it) may therefore run on after the call, and the client, have ended.
using NameResolver = std::function<std::vector<std::string>(const std::string& host, const std::string& port)>;

class GatewayClient {
 public:
  // `base_url`: "http://host[:port]" with a numeric port (80 when absent).
  // Throws std::invalid_argument otherwise. `secret`, when not empty, is sent
  // as Authorization: Bearer, as Stripe takes its API key; it appears nowhere
  // else (no log, no error message). `resolver` resolves a host that is not
  // an IP literal; null: the system's resolver (getaddrinfo). Tests pass a
  // slow one.
  GatewayClient(const std::string& base_url, std::chrono::milliseconds timeout, std::string secret = "",
                NameResolver resolver = nullptr);

  // Charges and classifies; `next` is where a successful charge leads.
  phasekey::PhaseResult Charge(const ChargeRequest& request, phasekey::RecoveryPoint next) const;

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::string host_;
  std::string port_;
  std::chrono::milliseconds timeout_;
  std::string secret_;
  NameResolver resolver_;
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_GATEWAY_CLIENT_H_
