#include "chaos/http.h"

#include <map>
#include <memory>
#include <mutex>

#include "phasekey/phases/http_client.h"

namespace ride_booking {
namespace {

using phasekey::Result;
using phasekey::Status;
using phasekey::phases::ProviderAnswer;

// The largest answer we accept: the gateway's ledger of a long run is the
// biggest (about 150 bytes per charge).
constexpr std::size_t kMaxResponseBytes = 64 * 1024 * 1024;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// One client for every exchange with the same CA to trust (a client is
// thread-safe); made on first use and never destroyed, as before there were
// several: threads may still use one while the process exits.
const phasekey::phases::HttpClient& Client(const std::string& ca_file) {
  static std::mutex mu;
  static auto* clients = new std::map<std::string, std::unique_ptr<phasekey::phases::HttpClient>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<phasekey::phases::HttpClient>& client = (*clients)[ca_file];
  if (client == nullptr) {
    phasekey::phases::BeastHttpClientOptions o;
    o.ca_file = ca_file;
    o.max_answer_bytes = kMaxResponseBytes;
    o.user_agent = "ride-booking-chaos";
    // One connection per exchange: the harness kills the processes it talks
    // to, and a kept-alive connection to a killed one would fail requests
    // that no idempotency key makes safe to send again.
    o.keep_alive = false;
    client = phasekey::phases::NewBeastHttpClient(o);
  }
  return *client;
}

}  // namespace

const std::string* ChaosHttpResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

Result<ChaosHttpResponse> HttpExchange(const std::string& host, int port, const ChaosHttpRequest& request,
                                       std::chrono::milliseconds timeout, const std::string& ca_file) {
  phasekey::phases::ProviderRequest out;
  out.method = request.method;
  out.path = request.target;
  out.body = request.body;
  for (const auto& [name, value] : request.headers) {
    if (EqualsIgnoreCase(name, "Content-Type")) {
      out.content_type = value;
    } else {
      out.headers.emplace_back(name, value);
    }
  }
  const std::string scheme = ca_file.empty() ? "http://" : "https://";
  const ProviderAnswer answer = Client(ca_file).Send(scheme + host + ":" + std::to_string(port), out, timeout);
  if (answer.transport != ProviderAnswer::Transport::kAnswered) return Status::Retryable(answer.error);
  return ChaosHttpResponse{answer.status, answer.headers, answer.body};
}

}  // namespace ride_booking
