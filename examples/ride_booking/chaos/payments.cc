#include "chaos/payments.h"

#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <random>

#include "chaos/http.h"

namespace ride_booking {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRefundTries = 20;
constexpr std::chrono::milliseconds kRefundRetryDelay{100};
constexpr std::chrono::milliseconds kHttpTimeout{5000};
constexpr std::chrono::milliseconds kStatePoll{250};

// Charge id -> refunded, from the body of GET /_ledger; false if unparsable.
bool LedgerStates(const std::string& ledger_json, std::map<std::string, bool>* out) {
  const auto ledger = nlohmann::json::parse(ledger_json, nullptr, false);
  if (!ledger.is_array()) return false;
  for (const auto& c : ledger) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) return false;
    (*out)[c["id"].get<std::string>()] = c.value("refunded", false);
  }
  return true;
}

std::map<std::string, std::string> DatabaseStates(const std::string& db_url) {
  std::map<std::string, std::string> states;
  pqxx::connection conn(db_url);
  pqxx::nontransaction tx(conn);
  for (const auto& r : tx.exec("SELECT charge_id, state FROM ride_payments")) {
    states[r[0].as<std::string>()] = r[1].as<std::string>();
  }
  return states;
}

PaymentStateCheck Compare(const std::map<std::string, bool>& ledger, const std::map<std::string, std::string>& db) {
  PaymentStateCheck c;
  for (const auto& [charge, refunded] : ledger) {
    ++c.charges;
    c.refunded += refunded ? 1 : 0;
    const std::string want = refunded ? "refunded" : "succeeded";
    const auto it = db.find(charge);
    const std::string got = it == db.end() ? "missing" : it->second;
    if (got == want) {
      ++c.matched;
    } else {
      c.mismatches.push_back("payment state of " + charge + " is " + got + " but the gateway's ledger says " + want);
    }
  }
  return c;
}

}  // namespace

ChaosRefunder::ChaosRefunder(int gateway_port, std::string gateway_ca, std::string api_secret, double share,
                             unsigned seed, std::chrono::milliseconds poll)
    : gateway_port_(gateway_port), gateway_ca_(std::move(gateway_ca)), api_secret_(std::move(api_secret)) {
  thread_ = std::thread([this, share, seed, poll] { Loop(share, seed, poll); });
}

ChaosRefunder::~ChaosRefunder() { Stop(); }

void ChaosRefunder::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ChaosRefunder::Loop(double share, unsigned seed, std::chrono::milliseconds poll) {
  std::seed_seq seq{seed, 11u};
  std::mt19937_64 rng(seq);
  std::bernoulli_distribution pick(share);
  std::set<std::string> seen;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, poll, [this] { return stop_; })) return;
    }
    ChaosHttpRequest req;
    req.target = "/_ledger";
    auto res = HttpExchange("127.0.0.1", gateway_port_, req, kHttpTimeout, gateway_ca_);
    std::map<std::string, bool> ledger;
    if (!res || res->status != 200 || !LedgerStates(res->body, &ledger)) continue;
    for (const auto& [charge, refunded] : ledger) {
      if (!seen.insert(charge).second || refunded || !pick(rng)) continue;
      if (Refund(charge)) refunds_.fetch_add(1);
    }
  }
}

// True once the gateway confirmed the refund (200, a replay included).
bool ChaosRefunder::Refund(const std::string& charge_id) {
  ChaosHttpRequest req;
  req.method = "POST";
  req.target = "/v1/refunds";
  req.headers = {{"Idempotency-Key", "chaos-refund-" + charge_id},
                 {"Content-Type", "application/x-www-form-urlencoded"},
                 {"Authorization", "Bearer " + api_secret_}};
  req.body = (charge_id.starts_with("pi_") ? "payment_intent=" : "charge=") + charge_id;
  for (int attempt = 0; attempt < kRefundTries; ++attempt) {
    auto res = HttpExchange("127.0.0.1", gateway_port_, req, kHttpTimeout, gateway_ca_);
    if (res && res->status == 200) return true;
    if (res && res->status < 500 && res->status != 409) return false;  // final: not refundable
    std::this_thread::sleep_for(kRefundRetryDelay);
  }
  return false;
}

phasekey::Result<PaymentStateCheck> WaitForPaymentStates(const std::string& db_url, const std::string& ledger_json,
                                                         std::chrono::milliseconds stall) {
  std::map<std::string, bool> ledger;
  if (!LedgerStates(ledger_json, &ledger)) return phasekey::Status::FailedPrecondition("unparsable ledger");
  const auto start = Clock::now();
  auto progressed = start;
  std::size_t fewest = std::numeric_limits<std::size_t>::max();
  for (;;) {
    PaymentStateCheck c;
    try {
      c = Compare(ledger, DatabaseStates(db_url));
    } catch (const std::exception& e) {
      return phasekey::Status::FailedPrecondition(std::string("ride_payments: ") + e.what());
    }
    c.waited_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (c.mismatches.size() < fewest) {
      fewest = c.mismatches.size();
      progressed = Clock::now();
    }
    if (c.mismatches.empty() || Clock::now() - progressed >= stall) return c;
    std::this_thread::sleep_for(kStatePoll);
  }
}

}  // namespace ride_booking
