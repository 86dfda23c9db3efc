#include "answer_util.h"

#include <openssl/evp.h>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include <cstdlib>
#include <string>

namespace phasekey::phases::internal {

std::string PercentEncode(std::string_view s) { return boost::urls::encode(s, boost::urls::unreserved_chars); }

std::string Base64(std::string_view bytes) {
  // EVP_EncodeBlock writes a NUL after the digits: hence the one byte more.
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string FormEncode(const FormFields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out.push_back('&');
    out += PercentEncode(name) + "=" + PercentEncode(value);
  }
  return out;
}

ProviderRequest JsonRequest(std::string method, std::string path, const nlohmann::json& body) {
  ProviderRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = body.dump();
  r.content_type = "application/json";
  return r;
}

ProviderRequest FormRequest(std::string method, std::string path, const FormFields& fields) {
  ProviderRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = FormEncode(fields);
  r.content_type = "application/x-www-form-urlencoded";
  return r;
}

ProviderRequest GetRequest(std::string path) {
  ProviderRequest r;
  r.method = "GET";
  r.path = std::move(path);
  return r;
}

nlohmann::json ParseJson(std::string_view body) { return nlohmann::json::parse(body, nullptr, false); }

std::string Str(const nlohmann::json& j, std::string_view key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return "";
}

const nlohmann::json& At(const nlohmann::json& j, std::initializer_list<std::string_view> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* cur = &j;
  for (auto key : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(key);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

nlohmann::json DecimalNumber(const std::string& decimal) { return std::strtod(decimal.c_str(), nullptr); }

bool Is2xx(int status) { return status >= 200 && status < 300; }

Classification Succeeded(std::string payment_id, std::string status) {
  Classification c;
  c.kind = Classification::Kind::kSucceeded;
  c.payment_id = std::move(payment_id);
  c.status = std::move(status);
  return c;
}

Classification Declined(std::string code, std::string message) {
  Classification c;
  c.kind = Classification::Kind::kTerminal;
  c.declined = true;
  c.code = std::move(code);
  c.message = std::move(message);
  return c;
}

Classification Refused(std::string code, std::string message) {
  Classification c = Declined(std::move(code), std::move(message));
  c.declined = false;
  return c;
}

Classification RetryLater(std::string code, std::string message) {
  Classification c;
  c.kind = Classification::Kind::kRetryable;
  c.code = std::move(code);
  c.message = std::move(message);
  return c;
}

Classification Unknown(std::string code, std::string message) {
  Classification c = RetryLater(std::move(code), std::move(message));
  c.kind = Classification::Kind::kOutcomeUnknown;
  return c;
}

std::optional<Classification> TransportFailure(const ProviderAnswer& answer) {
  switch (answer.transport) {
    case ProviderAnswer::Transport::kAnswered: return std::nullopt;
    case ProviderAnswer::Transport::kNotSent: return RetryLater("not_sent", "request not sent: " + answer.error);
    case ProviderAnswer::Transport::kSentNoAnswer:
      return Unknown("no_answer", "request sent, no answer: " + answer.error);
  }
  return Unknown("transport", answer.error);
}

Classification HttpFallback(const ProviderAnswer& answer, bool keyed, std::string code, std::string message) {
  const std::string status = std::to_string(answer.status);
  if (code.empty()) code = "http_" + status;
  if (message.empty()) message = "HTTP " + status;
  if (answer.status == 429) return RetryLater(std::move(code), std::move(message));
  if (answer.status >= 500) {
    return keyed ? RetryLater(std::move(code), std::move(message)) : Unknown(std::move(code), std::move(message));
  }
  return Refused(std::move(code), std::move(message));
}

}  // namespace phasekey::phases::internal
