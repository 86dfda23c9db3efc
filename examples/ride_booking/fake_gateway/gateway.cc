#include "fake_gateway/gateway.h"

#include <openssl/evp.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "fake_gateway/stripe_json.h"

namespace fake_gateway {
namespace {

GatewayResponse NotAllowed(std::string_view method, std::string_view path, std::string_view allowed) {
  GatewayResponse response =
      JsonResponse(405, ErrorJson("invalid_request_error", "", "",
                                  fmt::format("{} {} is not supported; use {}.", method, path, allowed)));
  response.headers.emplace_back("Allow", allowed);
  return response;
}

// Removes a key from the in-flight set when its execution ends, however, and
// wakes the requests waiting for it.
class InFlightGuard {
 public:
  InFlightGuard(std::mutex* mu, std::set<std::string, std::less<>>* in_flight, std::condition_variable* done,
                std::string key)
      : mu_(mu), in_flight_(in_flight), done_(done), key_(std::move(key)) {}
  ~InFlightGuard() {
    {
      std::lock_guard lock(*mu_);
      in_flight_->erase(key_);
    }
    done_->notify_all();
  }
  InFlightGuard(const InFlightGuard&) = delete;
  InFlightGuard& operator=(const InFlightGuard&) = delete;

 private:
  std::mutex* mu_;
  std::set<std::string, std::less<>>* in_flight_;
  std::condition_variable* done_;
  std::string key_;
};

}  // namespace

std::unique_ptr<Gateway> Gateway::Open(GatewayOptions options, std::string* error) {
  if (auto problem = ValidateFaults(options.faults)) {
    *error = *problem;
    return nullptr;
  }
  if (options.retention.count() < 0) {
    *error = "retention must not be negative";
    return nullptr;
  }
  if (options.lookup_lag.count() < 0) {
    *error = "lookup_lag must not be negative";
    return nullptr;
  }
  std::unique_ptr<Dialect> dialect = NewDialect(options.dialect);
  if (!dialect) {
    *error = fmt::format("unknown dialect '{}' (one of: {})", options.dialect, fmt::join(DialectNames(), ", "));
    return nullptr;
  }
  std::unique_ptr<Ledger> ledger = Ledger::Open(options.data_dir, error);
  if (!ledger) return nullptr;
  if (!options.clock) options.clock = [] { return std::chrono::system_clock::now(); };
  std::unique_ptr<OperationJournal> operations = OperationJournal::Open(options.data_dir);
  std::unique_ptr<Gateway> gateway(new Gateway(std::move(options), std::move(ledger), std::move(dialect)));
  gateway->operations_ = std::move(operations);
  return gateway;
}

Gateway::Gateway(GatewayOptions options, std::unique_ptr<Ledger> ledger, std::unique_ptr<Dialect> dialect)
    : options_(std::move(options)),
      ledger_(std::move(ledger)),
      dialect_(std::move(dialect)),
      faults_(options_.faults),
      fault_dice_(options_.seed),
      id_generator_(std::random_device{}()) {}

GatewayResponse Gateway::Handle(std::string_view method, std::string_view target, const Headers& headers,
                                std::string_view body) {
  const size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  std::string_view query = question == std::string_view::npos ? "" : target.substr(question + 1);
  if (path == "/_ledger") {
    return method == "GET" ? JsonResponse(200, LedgerJson(ledger_->Charges(), ledger_->Refunds()))
                           : NotAllowed(method, path, "GET");
  }
  if (path == "/_faults") {
    if (method == "GET") return JsonResponse(200, FaultsJson(faults()));
    return method == "POST" ? PostFaults(body) : NotAllowed(method, path, "GET, POST");
  }
  if (path == "/_forget_keys") return method == "POST" ? ForgetKeys() : NotAllowed(method, path, "POST");
  if (!options_.secret.empty() && !Authenticated(headers)) {
    return JsonResponse(401, ErrorJson("authentication_error", "", "", "Invalid or missing API key."));
  }
  if (auto response = dialect_->Handle(DialectRequest{method, path, query, headers, body}, *this)) {
    return std::move(*response);
  }
  return JsonResponse(
      404, ErrorJson("invalid_request_error", "", "", fmt::format("Unrecognized request URL ({}: {}).", method, path)));
}

bool Gateway::Authenticated(const Headers& headers) const {
  const std::string& secret = options_.secret;
  if (auto api_key = FindHeader(headers, "X-API-Key"); api_key && *api_key == secret) return true;
  const auto auth = FindHeader(headers, "Authorization");
  if (!auth) return false;
  const std::string basic_user = secret + ":";
  std::string encoded(4 * ((basic_user.size() + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                      reinterpret_cast<const unsigned char*>(basic_user.data()), static_cast<int>(basic_user.size()));
  encoded.resize(static_cast<std::size_t>(std::max(n, 0)));
  return *auth == "Bearer " + secret || *auth == secret || *auth == "Basic " + encoded;
}

Faults Gateway::faults() const {
  std::lock_guard lock(mu_);
  return faults_;
}

GatewayResponse Gateway::PostFaults(std::string_view body) {
  std::lock_guard lock(mu_);
  if (auto problem = MergeFaultsJson(body, &faults_)) {
    return JsonResponse(400, ErrorJson("invalid_request_error", "parameter_invalid", "", *problem));
  }
  return JsonResponse(200, FaultsJson(faults_));
}

GatewayResponse Gateway::ForgetKeys() {
  // + 1: an answer stored at this very millisecond is forgotten too.
  const int64_t before_ms = NowMs() + 1;
  std::string error;
  if (!ledger_->ForgetResponsesBefore(before_ms, &error)) {
    return JsonResponse(500, ErrorJson("api_error", "", "", "Ledger write failed: " + error));
  }
  return JsonResponse(200, nlohmann::json{{"forgotten_before_ms", before_ms}}.dump());
}

std::optional<StoredResponse> Gateway::Stored(const std::string& key) {
  return ledger_->FindResponse(key, NowMs() - options_.retention.count() * 1000);
}

std::optional<StoredResponse> Gateway::Recorded(const std::string& key) const { return ledger_->LatestResponse(key); }

std::vector<ChargeRecord> Gateway::Charges() const { return ledger_->Charges(); }

std::optional<ChargeRecord> Gateway::ChargeById(const std::string& id) const { return ledger_->ChargeById(id); }

std::vector<RefundRecord> Gateway::Refunds() const { return ledger_->Refunds(); }

namespace {

// Drops the charges made less than `lag` ago.
std::vector<ChargeRecord> OlderThan(std::vector<ChargeRecord> charges, std::chrono::milliseconds lag, int64_t now_ms) {
  const int64_t newest_visible_ms = now_ms - lag.count();
  std::erase_if(charges, [&](const ChargeRecord& c) { return c.recorded_at_ms > newest_visible_ms; });
  return charges;
}

}  // namespace

std::vector<ChargeRecord> Gateway::Searchable() const {
  return OlderThan(ledger_->Charges(), options_.lookup_lag, NowMs());
}

std::vector<ChargeRecord> Gateway::SearchableWithMetadata(const std::string& name, const std::string& value) const {
  return OlderThan(ledger_->ChargesWithMetadata(name, value), options_.lookup_lag, NowMs());
}

bool Gateway::LookupFails() { return Roll(faults().lookup_fail_rate); }

GatewayResponse Gateway::Charge(const Dialect& dialect, const ParsedCharge& charge) {
  if (!charge.key) return Execute(dialect, charge);
  const std::string& key = *charge.key;
  {
    std::unique_lock lock(mu_);
    // Checked under mu_, and an execution leaves in_flight_ only after its
    // response is in the ledger: so a key is always seen in flight, stored,
    // or new, and never executes twice at once.
    if (dialect.WaitsForInFlight()) {
      in_flight_done_.wait(lock, [&] { return !in_flight_.contains(key); });
    } else if (in_flight_.contains(key)) {
      GatewayResponse refused = dialect.InFlight(key);
      Journal("in_flight", key, refused);
      return refused;
    }
    if (auto stored = Stored(key)) {
      const bool same = stored->params == charge.canonical;
      GatewayResponse answer = same ? dialect.ReplayOf(key, *stored) : dialect.Reused(key, *stored);
      Journal(same ? "replayed" : "reused", key, answer);
      return answer;
    }
    in_flight_.insert(key);
  }
  InFlightGuard guard(&mu_, &in_flight_, &in_flight_done_, key);
  return Execute(dialect, charge);
}

GatewayResponse Gateway::Execute(const Dialect& dialect, const ParsedCharge& charge) {
  Faults faults = this->faults();
  if (faults.latency_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(faults.latency_ms));
  }
  if (Roll(faults.fail_rate)) {
    GatewayResponse failed = dialect.Failed("An error occurred with our connection to the bank (injected fault).");
    Journal("injected_failure", charge.key, failed);
    return failed;
  }
  LedgerEntry entry = Outcome(dialect, charge);
  if (charge.key || entry.charge) {
    std::string error;
    if (!ledger_->Append(entry, &error)) return dialect.Failed("Ledger write failed: " + error);
    if (entry.charge && options_.on_recorded) options_.on_recorded(entry);
  }
  GatewayResponse response = JsonResponse(entry.response.status, std::move(entry.response.body));
  // Stripe echoes the key it read; the other providers do not.
  if (charge.key && dialect.name() == "stripe") {
    response.headers.emplace_back("Idempotency-Key", *charge.key);
  }
  response.drop_connection = Roll(faults.drop_response_rate);
  Journal("executed", charge.key, response,
          entry.charge ? std::optional<std::string>(entry.charge->id) : std::optional<std::string>());
  return response;
}

void Gateway::Journal(std::string_view op, const std::optional<std::string>& key, const GatewayResponse& response,
                      const std::optional<std::string>& charge_id) {
  if (!operations_) return;
  operations_->Record(Operation{NowMs(), std::string(op), key, response.status, charge_id, response.drop_connection});
}

LedgerEntry Gateway::Outcome(const Dialect& dialect, const ParsedCharge& charge) {
  LedgerEntry entry;
  entry.key = charge.key;
  entry.response.params = charge.canonical;
  entry.response.stored_at_ms = NowMs();
  const std::string_view prefix = charge.id_prefix.empty() ? dialect.id_prefix() : charge.id_prefix;
  const std::string id = charge.payment_id.empty() ? NewChargeId(prefix) : charge.payment_id;
  const ChargeParams& params = charge.params;
  if (charge.declined) {
    Answer answer = dialect.Declined(charge, id);
    entry.response.status = answer.status;
    entry.response.body = std::move(answer.body);
    return entry;
  }
  std::optional<std::string> ledger_key;
  if (!charge.ledger_key.empty()) ledger_key = charge.ledger_key;
  entry.charge = ChargeRecord{id,
                              ledger_key,
                              params.amount,
                              params.currency,
                              params.customer,
                              params.description,
                              entry.response.stored_at_ms / 1000,
                              params.metadata,
                              entry.response.stored_at_ms};
  Answer answer = dialect.Charged(charge, *entry.charge);
  entry.response.status = answer.status;
  entry.response.body = std::move(answer.body);
  return entry;
}

bool Gateway::Roll(double rate) {
  if (rate <= 0.0) return false;
  if (rate >= 1.0) return true;  // even if a draw rounds up to 1.0
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(fault_dice_) < rate;
}

std::string Gateway::NewChargeId(std::string_view prefix) {
  static constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::lock_guard lock(mu_);
  std::uniform_int_distribution<size_t> pick(0, sizeof kAlphabet - 2);
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id.push_back(kAlphabet[pick(id_generator_)]);
  return id;
}

int64_t Gateway::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock().time_since_epoch()).count();
}

}  // namespace fake_gateway
