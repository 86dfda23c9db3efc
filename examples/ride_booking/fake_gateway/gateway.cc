#include "fake_gateway/gateway.h"

#include <fmt/format.h>
#include <strings.h>

#include <algorithm>
#include <thread>
#include <variant>

#include "fake_gateway/form.h"
#include "fake_gateway/stripe_json.h"

namespace fake_gateway {
namespace {

constexpr size_t kMaxKeyLength = 255;  // Stripe: "up to 255 characters long"
constexpr char kDeclineMessage[] = "Your card was declined.";

GatewayResponse JsonResponse(int status, std::string body) {
  return {status, {{"Content-Type", "application/json"}}, std::move(body), false};
}

GatewayResponse ErrorResponse(int status, std::string_view type, std::string_view code,
                              std::string_view param, std::string_view message) {
  return JsonResponse(status, ErrorJson(type, code, param, message));
}

GatewayResponse InvalidRequest(std::string_view code, std::string_view param,
                               std::string_view message) {
  return ErrorResponse(400, "invalid_request_error", code, param, message);
}

// A retryable failure: nothing was charged or stored.
GatewayResponse ApiError(std::string_view message) {
  GatewayResponse response = ErrorResponse(500, "api_error", "", "", message);
  response.headers.emplace_back("Stripe-Should-Retry", "true");
  return response;
}

bool IsValidKey(std::string_view key) {
  auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; };
  return !key.empty() && key.size() <= kMaxKeyLength && IsValidUtf8(key) &&
         std::none_of(key.begin(), key.end(), control);
}

GatewayResponse KeyInUse() {
  GatewayResponse response = ErrorResponse(
      409, "idempotency_error", "idempotency_key_in_use", "",
      "There is currently another in-progress request using this Idempotent Key (that probably "
      "means you submitted twice, and the other request is still going through): please try "
      "again later.");
  response.headers.emplace_back("Stripe-Should-Retry", "true");
  return response;
}

GatewayResponse KeyReusedWithOtherParams() {
  return ErrorResponse(400, "idempotency_error", "", "",
                       "Keys for idempotent requests can only be used with the same parameters "
                       "they were first used with. Try using a key other than the one used "
                       "before, or wait for the key to expire.");
}

GatewayResponse Replay(const std::string& key, const StoredResponse& stored) {
  GatewayResponse response = JsonResponse(stored.status, stored.body);
  response.headers.emplace_back("Idempotency-Key", key);
  response.headers.emplace_back("Idempotent-Replayed", "true");
  return response;
}

// Removes a key from the in-flight set when its execution ends, however.
class InFlightGuard {
 public:
  InFlightGuard(std::mutex* mu, std::set<std::string, std::less<>>* in_flight, std::string key)
      : mu_(mu), in_flight_(in_flight), key_(std::move(key)) {}
  ~InFlightGuard() {
    std::lock_guard lock(*mu_);
    in_flight_->erase(key_);
  }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;

 private:
  std::mutex* mu_;
  std::set<std::string, std::less<>>* in_flight_;
  std::string key_;
};

}  // namespace

std::optional<std::string> FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [field, value] : headers) {
    if (field.size() == name.size() && ::strncasecmp(field.data(), name.data(), name.size()) == 0) {
      return value;
    }
  }
  return std::nullopt;
}

std::unique_ptr<Gateway> Gateway::Open(GatewayOptions options, std::string* error) {
  if (auto problem = ValidateFaults(options.faults)) {
    *error = *problem;
    return nullptr;
  }
  if (options.retention.count() < 0) {
    *error = "retention must not be negative";
    return nullptr;
  }
  std::unique_ptr<Ledger> ledger = Ledger::Open(options.data_dir, error);
  if (!ledger) return nullptr;
  if (!options.clock) options.clock = [] { return std::chrono::system_clock::now(); };
  return std::unique_ptr<Gateway>(new Gateway(std::move(options), std::move(ledger)));
}

Gateway::Gateway(GatewayOptions options, std::unique_ptr<Ledger> ledger)
    : options_(std::move(options)),
      ledger_(std::move(ledger)),
      faults_(options_.faults),
      fault_dice_(options_.seed),
      id_generator_(std::random_device{}()) {}

GatewayResponse Gateway::Handle(std::string_view method, std::string_view target,
                                const Headers& headers, std::string_view body) {
  std::string_view path = target.substr(0, target.find('?'));
  auto only = [&](std::string_view allowed) {
    GatewayResponse response = InvalidRequest(
        "", "", fmt::format("{} {} is not supported; use {}.", method, path, allowed));
    response.status = 405;
    response.headers.emplace_back("Allow", allowed);
    return response;
  };
  if (path == "/v1/charges") {
    return method == "POST" ? PostCharge(headers, body) : only("POST");
  }
  if (path == "/_ledger") {
    return method == "GET" ? JsonResponse(200, LedgerJson(ledger_->Charges())) : only("GET");
  }
  if (path == "/_faults") {
    if (method == "GET") return JsonResponse(200, FaultsJson(faults()));
    return method == "POST" ? PostFaults(body) : only("GET, POST");
  }
  return ErrorResponse(404, "invalid_request_error", "", "",
                       fmt::format("Unrecognized request URL ({}: {}).", method, path));
}

Faults Gateway::faults() const {
  std::lock_guard lock(mu_);
  return faults_;
}

GatewayResponse Gateway::PostFaults(std::string_view body) {
  std::lock_guard lock(mu_);
  if (auto problem = MergeFaultsJson(body, &faults_)) {
    return InvalidRequest("parameter_invalid", "", *problem);
  }
  return JsonResponse(200, FaultsJson(faults_));
}

GatewayResponse Gateway::PostCharge(const Headers& headers, std::string_view body) {
  std::optional<std::string> key = FindHeader(headers, "Idempotency-Key");
  if (key && !IsValidKey(*key)) {
    return InvalidRequest(
        "idempotency_key_invalid", "",
        fmt::format("An Idempotency-Key is 1 to {} bytes of UTF-8 text.", kMaxKeyLength));
  }
  auto parsed = ParseChargeParams(body);
  if (const auto* problem = std::get_if<ParamError>(&parsed)) {
    return InvalidRequest(problem->code, problem->param, problem->message);
  }
  const ChargeParams& params = std::get<ChargeParams>(parsed);
  std::string canonical = CanonicalParams(params);
  if (!key) return Execute(key, params, canonical);
  {
    std::lock_guard lock(mu_);
    // Checked under mu_, and an execution leaves in_flight_ only after its
    // response is in the ledger: so a key is always seen in flight, stored,
    // or new, and never executes twice at once.
    if (in_flight_.contains(*key)) return KeyInUse();
    int64_t not_before_ms = NowMs() - options_.retention.count() * 1000;
    if (auto stored = ledger_->FindResponse(*key, not_before_ms)) {
      return stored->params == canonical ? Replay(*key, *stored) : KeyReusedWithOtherParams();
    }
    in_flight_.insert(*key);
  }
  InFlightGuard guard(&mu_, &in_flight_, *key);
  return Execute(key, params, canonical);
}

GatewayResponse Gateway::Execute(const std::optional<std::string>& key, const ChargeParams& params,
                                 const std::string& canonical) {
  Faults faults = this->faults();
  if (faults.latency_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(faults.latency_ms));
  }
  if (Roll(faults.fail_rate)) {
    return ApiError("An error occurred with our connection to Stripe (injected fault).");
  }
  LedgerEntry entry = Outcome(key, params, canonical);
  if (key || entry.charge) {
    std::string error;
    if (!ledger_->Append(entry, &error)) return ApiError("Ledger write failed: " + error);
  }
  GatewayResponse response = JsonResponse(entry.response.status, std::move(entry.response.body));
  if (key) response.headers.emplace_back("Idempotency-Key", *key);
  response.drop_connection = Roll(faults.drop_response_rate);
  return response;
}

LedgerEntry Gateway::Outcome(const std::optional<std::string>& key, const ChargeParams& params,
                             const std::string& canonical) {
  LedgerEntry entry;
  entry.key = key;
  entry.response.params = canonical;
  entry.response.stored_at_ms = NowMs();
  if (IsDeclinedCustomer(params.customer)) {
    entry.response.status = 402;
    entry.response.body = ErrorJson("card_error", "card_declined", "", kDeclineMessage);
    return entry;
  }
  entry.charge = ChargeRecord{NewChargeId(),
                              key,
                              params.amount,
                              params.currency,
                              params.customer,
                              params.description,
                              entry.response.stored_at_ms / 1000};
  entry.response.status = 200;
  entry.response.body = ChargeJson(*entry.charge);
  return entry;
}

bool Gateway::Roll(double rate) {
  if (rate <= 0.0) return false;
  if (rate >= 1.0) return true;  // even if a draw rounds up to 1.0
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(fault_dice_) < rate;
}

std::string Gateway::NewChargeId() {
  static constexpr char kAlphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::lock_guard lock(mu_);
  std::uniform_int_distribution<size_t> pick(0, sizeof kAlphabet - 2);
  std::string id = "ch_";
  for (int i = 0; i < 24; ++i) id.push_back(kAlphabet[pick(id_generator_)]);
  return id;
}

int64_t Gateway::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock().time_since_epoch())
      .count();
}

}  // namespace fake_gateway
