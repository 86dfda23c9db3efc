// HttpClient: how adapters' requests reach gateways.
//
// One interface, so the charge phase can be tested with a fake, and one real
// implementation on Boost.Beast (NewBeastHttpClient): http:// base URLs are
// plain TCP (tests use loopback), https:// ones use TLS through OpenSSL with
// certificate and host name verification. Connections are kept alive and
// reused per scheme, host and port (BeastHttpClientOptions, docs/providers.md);
// the whole call (resolution included) ends within its timeout. A request on
// a reused connection that the server had closed (the write fails, or the
// connection ends before any byte of the answer) is sent once more on a new
// connection only when ProviderRequest::resend_if_connection_stale says a
// repeat is safe; else it answers kSentNoAnswer, as any lost answer.
// In a build with crash points, the Beast client passes "foreign.sent"
// (phasekey/crash_point.h) after writing a request and before reading its
// answer: the point where the gateway may act on a request whose answer the
// caller never records.
#ifndef PHASEKEY_PHASES_HTTP_CLIENT_H_
#define PHASEKEY_PHASES_HTTP_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/phases/provider_adapter.h"
#include "phasekey/status.h"

namespace phasekey::phases {

// Sends one request to a gateway. Implementations must be thread-safe;
// NewBeastHttpClient makes the real one.
class HttpClient {
 public:
  virtual ~HttpClient() = default;

  // Sends `request` to `base_url` + request.path and returns within
  // `timeout`. Never throws. The answer's transport says precisely how far
  // the request got: kNotSent only when no byte of it can have reached the
  // server (see ProviderAnswer). Thread-safe: calls may run concurrently.
  virtual ProviderAnswer Send(std::string_view base_url, const ProviderRequest& request,
                              std::chrono::milliseconds timeout) const = 0;
};

// A parsed base URL: "https://api.example.com:8443/prefix".
struct BaseUrl {
  bool tls = false;         // https: TLS with certificate and host name checks
  std::string host;         // without brackets for IPv6 literals
  std::uint16_t port = 0;   // the scheme's default when absent
  std::string path_prefix;  // "" or "/prefix" (no trailing slash)
};

// Accepts http:// and https:// URLs with a host, an optional port and an
// optional path; no user info, query or fragment. InvalidArgument otherwise.
Result<BaseUrl> ParseBaseUrl(std::string_view url);

// Resolves a host name to IP address literals ("127.0.0.1", "::1"), in the
// order to try them; may block and may throw.
using NameResolver = std::function<std::vector<std::string>(const std::string& host, const std::string& port)>;

// Limits and trust of the Beast client; every default is explained below.
struct BeastHttpClientOptions {
  // Answers larger than this are treated as lost (kSentNoAnswer): a gateway
  // answer is a few kilobytes.
  std::size_t max_answer_bytes = 4 * 1024 * 1024;
  // Sent as User-Agent.
  std::string user_agent = "phasekey-phases/0.1";
  // Extra PEM file of trusted CAs for https (the system store is always
  // used); empty for none. A file that cannot be loaded fails every https
  // call as kNotSent, with the reason in the answer's error.
  std::string ca_file;
  // Resolves host names that are not IP literals; null: the system's
  // resolver (getaddrinfo). It runs on a detached thread of its own and the
  // call stops waiting at its deadline (getaddrinfo cannot be interrupted),
  // so a slow name server cannot hold a call past its timeout; a copy of the
  // function may therefore run on after the call, and the client, have
  // ended. A failed or late resolution answers kNotSent.
  NameResolver resolver;
  // Keep connections to gateways open and reuse them. Default true: a new
  // connection costs each call a TCP and a TLS handshake (round trips and
  // CPU). False: one connection per call, with "Connection: close".
  bool keep_alive = true;
  // Idle connections kept per gateway (scheme, host and port). Default 32:
  // one per handler thread of a service at the concurrency it is measured
  // at, so steady traffic opens no new connection.
  std::size_t max_idle_per_gateway = 32;
  // An idle connection older than this is closed, never used. Default 30 s:
  // below the 60 s or more that gateways and load balancers commonly keep an
  // idle connection, so the gateway rarely closes one first.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(30);
};

// The Beast-based client. Thread-safe; cheap to share.
std::unique_ptr<HttpClient> NewBeastHttpClient(BeastHttpClientOptions options = {});

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_HTTP_CLIENT_H_
