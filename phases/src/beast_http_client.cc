// The Boost.Beast HttpClient. The only file of phasekey_phases that includes
// Beast and Asio (they compile slowly).
//
// One call = one deadline, then one io_context on the calling thread, one
// connection, one request, one answer. Name resolution comes first, on a
// thread of its own that the call stops waiting for at the deadline
// (ResolveBefore). A steady_timer bounds the rest: when it fires it closes
// the socket, and the pending operation fails. The stage the call had reached
// when something failed decides the transport verdict: before the first byte
// of the request was accepted by the socket, kNotSent; from then on,
// kSentNoAnswer.
//
// Crash point "foreign.sent" (phasekey/crash_point.h): after the whole
// request was written, before the answer is read.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "phasekey/crash_point.h"
#include "phasekey/phases/http_client.h"

namespace phasekey::phases {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;

using Deadline = std::chrono::steady_clock::time_point;

enum class Stage { kConnect, kHandshake, kWrite, kRead, kDone };

// The state of one call, shared by the coroutine and the deadline.
struct Call {
  Stage stage = Stage::kConnect;
  std::size_t written = 0;  // request bytes the socket accepted
  bool timed_out = false;
  ProviderAnswer answer;

  // Records a failure at the current stage.
  void Fail(const ErrorCode& ec) {
    const bool sent = stage == Stage::kRead || (stage == Stage::kWrite && written > 0);
    answer.transport = sent ? ProviderAnswer::Transport::kSentNoAnswer : ProviderAnswer::Transport::kNotSent;
    static constexpr const char* kStageNames[] = {"connect", "TLS handshake", "write", "read", "done"};
    answer.error = std::string(kStageNames[static_cast<int>(stage)]) + ": " +
                   (timed_out ? std::string("timed out") : ec.message());
  }
};

http::request<http::string_body> ToBeast(const BaseUrl& url, const ProviderRequest& r,
                                         const BeastHttpClientOptions& options) {
  http::request<http::string_body> req;
  req.method_string(r.method);
  req.target(url.path_prefix + r.path);
  req.version(11);
  const bool default_port = url.port == (url.tls ? 443 : 80);
  const bool ipv6 = url.host.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + url.host + "]" : url.host;
  req.set(http::field::host, default_port ? host : host + ":" + std::to_string(url.port));
  req.set(http::field::user_agent, options.user_agent);
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : r.headers) req.set(name, value);
  if (!r.content_type.empty()) req.set(http::field::content_type, r.content_type);
  req.body() = r.body;
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") req.prepare_payload();
  return req;
}

void ReadAnswer(http::response<http::string_body>& res, ProviderAnswer& answer) {
  answer.transport = ProviderAnswer::Transport::kAnswered;
  answer.status = static_cast<int>(res.result_int());
  for (const auto& field : res)
    answer.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  answer.body = std::move(res.body());
}

// The system's resolver: getaddrinfo through Asio's blocking resolve.
std::vector<std::string> SystemResolve(const std::string& host, const std::string& port) {
  asio::io_context io;
  tcp::resolver resolver(io);
  std::vector<std::string> addresses;
  for (const auto& entry : resolver.resolve(host, port)) addresses.push_back(entry.endpoint().address().to_string());
  return addresses;
}

// Runs `resolve` on a detached thread and waits for it until `deadline`.
// Returns its addresses; throws what it threw, or std::runtime_error when the
// deadline passes first. Asio's asynchronous resolve would not do: cancelling
// it does not interrupt getaddrinfo, and the io_context waits for (and its
// destructor joins) the thread still blocked in it. The thread owns copies of
// everything it touches, so it may outlive the call.
std::vector<std::string> ResolveBefore(const NameResolver& resolve, const std::string& host, const std::string& port,
                                       Deadline deadline) {
  auto result = std::make_shared<std::promise<std::vector<std::string>>>();
  std::future<std::vector<std::string>> answer = result->get_future();
  std::thread([resolve, host, port, result] {
    try {
      result->set_value(resolve(host, port));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  if (answer.wait_until(deadline) != std::future_status::ready) throw std::runtime_error("timed out");
  return answer.get();
}

// The endpoints to connect to: the host itself when it is an IP literal (no
// resolution), else what `resolve` answers before `deadline`. Throws when
// there is none.
std::vector<tcp::endpoint> Endpoints(const NameResolver& resolve, const BaseUrl& url, Deadline deadline) {
  ErrorCode ec;
  const auto literal = asio::ip::make_address(url.host, ec);
  if (!ec) return {tcp::endpoint(literal, url.port)};
  std::vector<tcp::endpoint> endpoints;
  for (const std::string& address : ResolveBefore(resolve, url.host, std::to_string(url.port), deadline)) {
    endpoints.emplace_back(asio::ip::make_address(address), url.port);  // throws on a bad one
  }
  if (endpoints.empty()) throw std::runtime_error("no address");
  return endpoints;
}

// Runs the exchange on `stream` (beast::tcp_stream or ssl::stream of one).
template <class Stream>
asio::awaitable<void> Exchange(Stream& stream, const std::vector<tcp::endpoint>& endpoints,
                               http::request<http::string_body>& req, std::size_t limit, Call& call) {
  ErrorCode ec;
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  co_await beast::get_lowest_layer(stream).async_connect(endpoints, token);
  if (ec) co_return call.Fail(ec);
  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    call.stage = Stage::kHandshake;
    co_await stream.async_handshake(ssl::stream_base::client, token);
    if (ec) co_return call.Fail(ec);
  }
  call.stage = Stage::kWrite;
  http::serializer<true, http::string_body> serializer(req);
  while (!serializer.is_done()) {
    call.written += co_await http::async_write_some(stream, serializer, token);
    if (ec) co_return call.Fail(ec);
  }
  PHASEKEY_CRASH_POINT("foreign.sent");
  call.stage = Stage::kRead;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(limit);
  co_await http::async_read(stream, buffer, parser, token);
  if (ec) co_return call.Fail(ec);
  call.stage = Stage::kDone;
  ReadAnswer(parser.get(), call.answer);
}

class BeastHttpClient final : public HttpClient {
 public:
  explicit BeastHttpClient(BeastHttpClientOptions options)
      : options_(std::move(options)), tls_(ssl::context::tls_client) {
    if (!options_.resolver) options_.resolver = SystemResolve;
    tls_.set_default_verify_paths();
    if (!options_.ca_file.empty()) {
      ErrorCode ignored;  // a bad file shows up as failed verifications
      tls_.load_verify_file(options_.ca_file, ignored);
    }
    tls_.set_verify_mode(ssl::verify_peer);
  }

  ProviderAnswer Send(std::string_view base_url, const ProviderRequest& request,
                      std::chrono::milliseconds timeout) const override {
    Result<BaseUrl> url = ParseBaseUrl(base_url);
    if (!url) {
      ProviderAnswer answer;
      answer.transport = ProviderAnswer::Transport::kNotSent;
      answer.error = url.error().message();
      return answer;
    }
    const Deadline deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<tcp::endpoint> endpoints;
    try {
      endpoints = Endpoints(options_.resolver, *url, deadline);
    } catch (const std::exception& e) {
      ProviderAnswer answer;
      answer.transport = ProviderAnswer::Transport::kNotSent;
      answer.error = "resolve " + url->host + ": " + e.what();
      return answer;
    }
    return url->tls ? SendTls(*url, endpoints, request, deadline) : SendPlain(endpoints, request, *url, deadline);
  }

 private:
  ProviderAnswer SendPlain(const std::vector<tcp::endpoint>& endpoints, const ProviderRequest& request,
                           const BaseUrl& url, Deadline deadline) const {
    asio::io_context io;
    beast::tcp_stream stream(io);
    return Run(io, stream, url, endpoints, request, deadline);
  }

  ProviderAnswer SendTls(const BaseUrl& url, const std::vector<tcp::endpoint>& endpoints,
                         const ProviderRequest& request, Deadline deadline) const {
    asio::io_context io;
    ssl::stream<beast::tcp_stream> stream(io, tls_);
    // SNI and certificate name check for the host we asked for.
    if (!SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str())) {
      ProviderAnswer answer;
      answer.transport = ProviderAnswer::Transport::kNotSent;
      answer.error = "cannot set TLS server name";
      return answer;
    }
    stream.set_verify_callback(ssl::host_name_verification(url.host));
    return Run(io, stream, url, endpoints, request, deadline);
  }

  template <class Stream>
  ProviderAnswer Run(asio::io_context& io, Stream& stream, const BaseUrl& url,
                     const std::vector<tcp::endpoint>& endpoints, const ProviderRequest& request,
                     Deadline deadline_at) const {
    Call call;
    http::request<http::string_body> req = ToBeast(url, request, options_);
    asio::steady_timer deadline(io, deadline_at);
    deadline.async_wait([&](const ErrorCode& ec) {
      if (ec) return;  // cancelled: the exchange finished first
      call.timed_out = true;
      ErrorCode ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
    });
    asio::co_spawn(io, Exchange(stream, endpoints, req, options_.max_answer_bytes, call), [&](std::exception_ptr e) {
      if (e && call.stage != Stage::kDone) call.Fail(asio::error::fault);
      deadline.cancel();
    });
    io.run();
    ErrorCode ignored;
    beast::get_lowest_layer(stream).socket().close(ignored);
    return std::move(call.answer);
  }

  BeastHttpClientOptions options_;
  // SSL_CTX is safe to share between threads once configured (done above);
  // streams only read it.
  mutable ssl::context tls_;
};

}  // namespace

std::unique_ptr<HttpClient> NewBeastHttpClient(BeastHttpClientOptions options) {
  return std::make_unique<BeastHttpClient>(std::move(options));
}

}  // namespace phasekey::phases
