#include "fake_gateway/server.h"

#include <fmt/format.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

namespace fake_gateway {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr int kIoThreads = 2;
// Requests executing at once; each may sleep latency_ms, so this is what
// bounds throughput under the latency fault. The chaos demo runs 16 clients.
constexpr int kHandlerThreads = 64;
constexpr uint64_t kBodyLimit = 64 * 1024;
constexpr auto kIdleTimeout = std::chrono::seconds(60);
constexpr auto kWriteTimeout = std::chrono::seconds(30);

using Request = http::request<http::string_body>;

GatewayResponse ServeRequest(Gateway* gateway, const Request& request) {
  Headers headers;
  for (const auto& field : request) {
    headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  return gateway->Handle(request.method_string(), request.target(), headers, request.body());
}

GatewayResponse PlainError(int status, std::string_view message) {
  return {status, {{"Content-Type", "text/plain"}}, std::string(message) + "\n", false};
}

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection, plain (Stream = beast::tcp_stream) or TLS (TlsStream). Its
// handlers run on its strand; Handle runs on the pool.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(tcp::socket socket, Gateway* gateway,
          net::thread_pool* handlers) requires std::is_same_v<Stream, beast::tcp_stream>
      : stream_(std::move(socket)), gateway_(gateway), handlers_(handlers) {}
  Session(tcp::socket socket, net::ssl::context& tls, Gateway* gateway,
          net::thread_pool* handlers) requires std::is_same_v<Stream, TlsStream>
      : stream_(std::move(socket), tls), gateway_(gateway), handlers_(handlers) {}

  void Start() {
    net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::Begin, this->shared_from_this()));
  }

 private:
  beast::tcp_stream& Tcp() { return beast::get_lowest_layer(stream_); }

  // TLS: the handshake first, bounded like a request.
  void Begin() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      Tcp().expires_after(kIdleTimeout);
      stream_.async_handshake(net::ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
        if (ec) return self->Close();
        self->Read();
      });
    } else {
      Read();
    }
  }

  void Read() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    Tcp().expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, this->shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec == http::error::body_limit) return Send(PlainError(413, "body too large"), false);
    // Beast's http errors other than a clean or mid-message end of stream
    // are the parser rejecting the request.
    bool parse_error = ec && ec.category() == http::make_error_code(http::error::bad_target).category() &&
                       ec != http::error::end_of_stream && ec != http::error::partial_message;
    if (parse_error) return Send(PlainError(400, "malformed request: " + ec.message()), false);
    if (ec) return Close();
    Tcp().expires_never();
    auto request = std::make_shared<Request>(parser_->release());
    net::post(*handlers_, [self = this->shared_from_this(), request] {
      GatewayResponse response = ServeRequest(self->gateway_, *request);
      bool keep_alive = request->keep_alive();
      net::post(self->stream_.get_executor(), [self, response = std::move(response), keep_alive]() mutable {
        self->Send(std::move(response), keep_alive);
      });
    });
  }

  void Send(GatewayResponse response, bool keep_alive) {
    if (response.drop_connection) return Close();
    auto message = std::make_shared<http::response<http::string_body>>();
    message->version(11);
    message->result(static_cast<unsigned>(response.status));
    for (const auto& [name, value] : response.headers) message->set(name, value);
    message->keep_alive(keep_alive);
    message->body() = std::move(response.body);
    message->prepare_payload();
    Tcp().expires_after(kWriteTimeout);
    http::async_write(stream_, *message, [self = this->shared_from_this(), message](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      if (!message->keep_alive()) return self->ShutdownSend();
      self->Read();
    });
  }

  // After a final answer: the peer reads it, then end of stream.
  void ShutdownSend() {
    beast::error_code ignored;
    Tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  void Close() {
    beast::error_code ignored;
    Tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Tcp().socket().close(ignored);
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Gateway* const gateway_;
  net::thread_pool* const handlers_;
};

std::string FormatAddress(const tcp::endpoint& endpoint) {
  std::string ip = endpoint.address().to_string();
  if (endpoint.address().is_v6()) ip = "[" + ip + "]";
  return fmt::format("{}:{}", ip, endpoint.port());
}

}  // namespace

struct Server::Impl {
  explicit Impl(Gateway* gateway)
      : gateway(gateway),
        ioc(kIoThreads),
        acceptor(ioc),
        handlers(kHandlerThreads),
        tls(net::ssl::context::tls_server) {}

  bool LoadCertificate(const ServerOptions& options, std::string* error);
  bool Listen(const ServerOptions& options, std::string* error);
  void Accept();

  Gateway* const gateway;
  // Declaration order is destruction order in reverse: the io_context goes
  // last, destroying the sessions still referenced by its queued handlers.
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::thread_pool handlers;
  std::vector<std::thread> io_threads;
  // https: the certificate and key, loaded once; read only afterwards.
  net::ssl::context tls;
  bool https = false;
  std::string address;
  bool stopped = false;
};

bool Server::Impl::LoadCertificate(const ServerOptions& options, std::string* error) {
  if (options.tls_cert_file.empty() && options.tls_key_file.empty()) return true;
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    *error = "--tls-cert and --tls-key go together";
    return false;
  }
  beast::error_code ec;
  tls.use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) {
    *error = fmt::format("cannot load the certificate {}: {}", options.tls_cert_file, ec.message());
    return false;
  }
  tls.use_private_key_file(options.tls_key_file, net::ssl::context::pem, ec);
  if (ec) {
    *error = fmt::format("cannot load the key {}: {}", options.tls_key_file, ec.message());
    return false;
  }
  https = true;
  return true;
}

bool Server::Impl::Listen(const ServerOptions& options, std::string* error) {
  beast::error_code ec;
  std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  net::ip::address ip = net::ip::make_address(host, ec);
  if (ec) {
    *error = fmt::format("not an IP address: {}", options.host);
    return false;
  }
  tcp::endpoint endpoint(ip, options.port);
  // Each step runs only if the ones before it succeeded.
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (!ec) address = FormatAddress(acceptor.local_endpoint(ec));
  if (ec) {
    *error = fmt::format("listen on {}: {}", FormatAddress(endpoint), ec.message());
    return false;
  }
  return true;
}

void Server::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec && https) std::make_shared<Session<TlsStream>>(std::move(socket), tls, gateway, &handlers)->Start();
    if (!ec && !https) std::make_shared<Session<beast::tcp_stream>>(std::move(socket), gateway, &handlers)->Start();
    Accept();
  });
}

std::unique_ptr<Server> Server::Start(Gateway* gateway, const ServerOptions& options, std::string* error) {
  auto impl = std::make_unique<Impl>(gateway);
  if (!impl->LoadCertificate(options, error) || !impl->Listen(options, error)) return nullptr;
  impl->Accept();
  for (int i = 0; i < kIoThreads; ++i) {
    impl->io_threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { Stop(); }

const std::string& Server::address() const { return impl_->address; }

void Server::Stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->ioc.stop();
  for (std::thread& thread : impl_->io_threads) thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
  impl_->handlers.join();  // running Handle calls finish; their replies stay queued
}

}  // namespace fake_gateway
