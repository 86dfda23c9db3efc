#include "chaos/report.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "phasekey/tools/stored_responses.h"
#include "ride_flow.h"
#include "ride_store.h"

namespace ride_booking {
namespace {

using phasekey::AccountKey;
using phasekey::DatabaseOptions;
using phasekey::EncryptionOptions;
using phasekey::Result;
using phasekey::Status;

// The engine names a foreign phase's provider key "<stable_id>:<phase>"; the
// ride flow's charge phase is "charge".
constexpr std::string_view kChargeSuffix = ":charge";

struct KeyRow {
  std::string account;
  std::string stable_id;
  std::string state;  // active, finished, dead
  int status = 0;     // 0 until finished
  std::string body;
  bool sealed = false;  // body is as stored, sealed (docs/data-protection.md)
};

struct RideRow {
  long long user_id = 0;
  std::optional<std::string> charge_id;
};

// This run's rows, indexed for the checks.
struct RunData {
  std::map<std::string, KeyRow> keys;                                       // by idempotency key
  std::map<std::string, std::vector<RideRow>> rides;                        // by idempotency key
  std::map<std::string, std::string> key_by_stable_id;                      // stable id -> idempotency key
  std::vector<std::pair<std::string, std::string>> charges;                 // (charge id, provider key), ledger order
  std::map<std::string, std::vector<std::string>> charges_by_provider_key;  // by the ledger's key
  std::map<std::string, std::string> ledger_key_by_stable_id;               // what the ledger shows for the charge
  std::map<std::string, std::string> stable_id_by_ledger_key;
  std::set<std::string> charge_ids;
};

constexpr const char* kRunKeys = kChaosRunKeys;

void LoadKeys(pqxx::transaction_base& tx, const std::string& first_key, RunData* d) {
  const ChaosRunKeyBounds b = ChaosBoundsOf(first_key);
  const pqxx::result rows = tx.exec_params(
      std::string("SELECT idempotency_key, account, stable_id::text, state::text, response_status, response_body, "
                  "data_key_id IS NOT NULL "
                  "FROM phasekey.idempotency_keys WHERE ") +
          kRunKeys,
      b.from, b.to, b.booking_from, b.booking_to);
  for (const auto& row : rows) {
    KeyRow k{row[1].as<std::string>(), row[2].as<std::string>(), row[3].as<std::string>(),
             row[4].is_null() ? 0 : row[4].as<int>(), ""};
    if (!row[5].is_null()) k.body = pqxx::binarystring(row[5]).str();
    k.sealed = row[6].as<bool>();
    d->key_by_stable_id[k.stable_id] = row[0].as<std::string>();
    d->keys[row[0].as<std::string>()] = std::move(k);
  }
}

void LoadRides(pqxx::transaction_base& tx, const std::string& first_key, RunData* d) {
  const ChaosRunKeyBounds b = ChaosBoundsOf(first_key);
  const pqxx::result rows =
      tx.exec_params(std::string("SELECT idempotency_key, user_id, charge_id FROM rides WHERE ") + kRunKeys, b.from,
                     b.to, b.booking_from, b.booking_to);
  for (const auto& row : rows) {
    RideRow r{row[1].as<long long>(), std::nullopt};
    if (!row[2].is_null()) r.charge_id = row[2].as<std::string>();
    d->rides[row[0].as<std::string>()].push_back(std::move(r));
  }
}

// The sealed stored responses of the run, opened with the services' keys
// (when given: without them they stay sealed and cannot match an answer).
Status OpenSealedResponses(const std::string& db_url, const EncryptionOptions& encryption, RunData* d) {
  std::vector<AccountKey> sealed;
  for (const auto& [key, row] : d->keys) {
    if (row.sealed && row.status != 0) sealed.emplace_back(row.account, key);
  }
  if (sealed.empty() || !encryption.enabled()) return Status::OK();
  DatabaseOptions database;
  database.url = db_url;
  auto opened = ReadStoredResponses(database, encryption, sealed);
  if (!opened) return opened.error();
  for (auto& [account_key, body] : *opened) d->keys[account_key.second].body = std::move(body);
  return Status::OK();
}

Status LoadLedger(const std::string& ledger_json, RunData* d) {
  const auto ledger = nlohmann::json::parse(ledger_json, nullptr, false);
  if (!ledger.is_array()) return Status::FailedPrecondition("the gateway's ledger is not a JSON array");
  for (const auto& c : ledger) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) {
      return Status::FailedPrecondition("a ledger entry without an id: " + c.dump());
    }
    const std::string id = c["id"].get<std::string>();
    const std::string key = c.contains("idempotency_key") && c["idempotency_key"].is_string()
                                ? c["idempotency_key"].get<std::string>()
                                : std::string();
    d->charges.emplace_back(id, key);
    d->charges_by_provider_key[key].push_back(id);
    d->charge_ids.insert(id);
  }
  return Status::OK();
}

// Records violations about one logical request.
class RequestCheck {
 public:
  RequestCheck(const ChaosRequestRecord& r, const RunData& d, ChaosFindings* f) : r_(r), d_(d), f_(f) {}

  void Run() {
    const auto rides = d_.rides.find(r_.key);
    const std::size_t ride_count = rides == d_.rides.end() ? 0 : rides->second.size();
    const auto key = d_.keys.find(r_.key);
    if (key == d_.keys.end()) {
      if (r_.first.received) Violation("answered " + std::to_string(r_.first.status) + " but has no key row");
      if (!r_.first.received) ++f_->never_recorded;
      if (ride_count != 0) Violation(std::to_string(ride_count) + " rides but no key row");
      return;
    }
    ++f_->checked;
    const KeyRow& k = key->second;
    if (k.account != AccountOf(r_.user_id)) Violation("the key row belongs to " + k.account);
    if (k.state != "finished") Violation("not finished (state " + k.state + ")");
    if (!r_.first.received && k.state == "finished") ++f_->finished_by_worker;
    if (ride_count != 1) Violation(std::to_string(ride_count) + " rides, want exactly 1");
    const std::vector<std::string>* charges = ChargesOf(k);
    const std::size_t charge_count = charges == nullptr ? 0 : charges->size();
    if (charge_count > 1) Violation(std::to_string(charge_count) + " charges in the ledger, want at most 1");
    if (r_.first.received && k.state == "finished" && (r_.first.status != k.status || r_.first.body != k.body)) {
      Violation("answered " + Describe(r_.first.status, r_.first.body) + " but stored " + Describe(k.status, k.body));
    }
    const int status = r_.first.received ? r_.first.status : k.status;
    if (status != 0) ++f_->final_statuses[status];
    if (status == 201) CheckCharged(r_.first.received ? r_.first.body : k.body, charges, rides);
    if (r_.user_id == kDeclinedUser && (status != 402 || charge_count != 0)) {
      Violation("declined user ended with " + std::to_string(status) + " and " + std::to_string(charge_count) +
                " charges; want 402 and none");
    }
    CheckReplay();
  }

 private:
  void Violation(const std::string& what) {
    f_->violations.push_back("key " + r_.key + " (user " + std::to_string(r_.user_id) + "): " + what);
  }

  static std::string Describe(int status, const std::string& body) {
    return std::to_string(status) + " (" + std::to_string(body.size()) + " bytes)";
  }

  const std::vector<std::string>* ChargesOf(const KeyRow& k) const {
    const auto ledger_key = d_.ledger_key_by_stable_id.find(k.stable_id);
    if (ledger_key == d_.ledger_key_by_stable_id.end()) return nullptr;
    const auto it = d_.charges_by_provider_key.find(ledger_key->second);
    return it == d_.charges_by_provider_key.end() ? nullptr : &it->second;
  }

  void CheckCharged(const std::string& body, const std::vector<std::string>* charges,
                    std::map<std::string, std::vector<RideRow>>::const_iterator rides) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("charge_id") || !j["charge_id"].is_string()) {
      return Violation("a 201 without a charge_id: " + body);
    }
    const std::string id = j["charge_id"].get<std::string>();
    if (d_.charge_ids.count(id) == 0) return Violation("the 201 names charge " + id + ", not in the ledger");
    if (charges == nullptr || std::find(charges->begin(), charges->end(), id) == charges->end()) {
      Violation("charge " + id + " is in the ledger under another provider key");
    }
    if (rides != d_.rides.end() && rides->second.size() == 1 && rides->second[0].charge_id != id) {
      Violation("the ride has charge_id " + rides->second[0].charge_id.value_or("NULL") + ", the 201 names " + id);
    }
  }

  void CheckReplay() {
    if (!r_.first.received) return;
    if (!r_.replay.received) return Violation("the replay got no final answer");
    if (r_.replay.status != r_.first.status || r_.replay.body != r_.first.body) {
      return Violation("the replay got " + Describe(r_.replay.status, r_.replay.body) + ", the first answer was " +
                       Describe(r_.first.status, r_.first.body));
    }
    if (!r_.replay.replayed_header) return Violation("the replay lacks Idempotent-Replayed: true");
    ++f_->replays_identical;
  }

  const ChaosRequestRecord& r_;
  const RunData& d_;
  ChaosFindings* f_;
};

// Every ledger charge must belong to a key of the run whose ride carries it.
void CheckLedger(const RunData& d, ChaosFindings* f) {
  for (const auto& [id, provider_key] : d.charges) {
    const auto stable_id = d.stable_id_by_ledger_key.find(provider_key);
    const auto key = stable_id == d.stable_id_by_ledger_key.end() ? d.key_by_stable_id.end()
                                                                  : d.key_by_stable_id.find(stable_id->second);
    if (key == d.key_by_stable_id.end()) {
      f->violations.push_back("charge " + id + " (provider key \"" + provider_key + "\"): no key of this run");
      continue;
    }
    const auto rides = d.rides.find(key->second);
    const bool carried = rides != d.rides.end() && std::any_of(rides->second.begin(), rides->second.end(),
                                                               [&id](const RideRow& r) { return r.charge_id == id; });
    if (!carried) f->violations.push_back("key " + key->second + ": charge " + id + " has no ride carrying it");
  }
}

}  // namespace

Result<long long> WaitForRunKeys(const std::string& db_url, const std::string& first_key,
                                 std::chrono::milliseconds timeout, const std::function<bool(long long)>& on_poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const ChaosRunKeyBounds b = ChaosBoundsOf(first_key);
  try {
    pqxx::connection conn(db_url);
    for (;;) {
      pqxx::nontransaction tx(conn);
      const long long active =
          tx.exec_params1(
                std::string("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'active' AND ") + kRunKeys,
                b.from, b.to, b.booking_from, b.booking_to)[0]
              .as<long long>();
      const bool keep_waiting = on_poll ? on_poll(active) : true;
      if (active == 0 || !keep_waiting || std::chrono::steady_clock::now() >= deadline) return active;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  } catch (const std::exception& e) {
    return Status::FailedPrecondition(std::string("waiting for the worker: ") + e.what());
  }
}

Result<ChaosFindings> CheckChaosRun(const std::string& db_url, const std::string& first_key,
                                    const std::vector<ChaosRequestRecord>& records, const std::string& ledger_json,
                                    const LedgerKeyFn& ledger_key, const EncryptionOptions& encryption) {
  RunData d;
  if (Status s = LoadLedger(ledger_json, &d); !s.ok()) return s;
  try {
    pqxx::connection conn(db_url);
    pqxx::work tx(conn);
    LoadKeys(tx, first_key, &d);
    LoadRides(tx, first_key, &d);
  } catch (const std::exception& e) {
    return Status::FailedPrecondition(std::string("reading the run's rows: ") + e.what());
  }
  if (Status s = OpenSealedResponses(db_url, encryption, &d); !s.ok()) return s;
  for (const auto& [key, row] : d.keys) {
    const std::string provider_key = row.stable_id + std::string(kChargeSuffix);
    const std::string shown = ledger_key ? ledger_key(provider_key) : provider_key;
    d.ledger_key_by_stable_id[row.stable_id] = shown;
    d.stable_id_by_ledger_key[shown] = row.stable_id;
  }
  ChaosFindings f;
  f.charges = static_cast<long long>(d.charges.size());
  for (const auto& r : records) {
    RequestCheck(r, d, &f).Run();
    f.bookings += r.booking;
  }
  CheckLedger(d, &f);
  return f;
}

namespace {

void PrintCrashDeaths(std::FILE* out, const ChaosTotals& t) {
  long long total = 0;
  for (const auto& [where, n] : t.crash_deaths) total += n;
  std::fprintf(out, "  crash-point deaths  %6lld\n", total);
  for (const auto& [where, n] : t.crash_deaths) std::fprintf(out, "    %-52s %4lld\n", where.c_str(), n);
}

}  // namespace

std::vector<std::string> ChaosFailures(const ChaosTotals& t, const ChaosFindings& f) {
  std::vector<std::string> failures = f.violations;
  for (const auto& d : t.unexpected_deaths) failures.push_back(d);
  if (f.checked == 0) {
    failures.push_back("nothing was checked: no request of the run (" + std::to_string(t.requests) +
                       " made) has a key row to check against the rides and the ledger");
  }
  return failures;
}

void PrintChaosReport(std::FILE* out, const ChaosTotals& t, const ChaosFindings& f, std::size_t max_violations) {
  const long long requests = t.requests;
  std::fprintf(out, "chaos report: seed %u, run %s\n", t.seed, t.run_id.c_str());
  if (!t.gateway.empty()) std::fprintf(out, "  gateway             %s\n", t.gateway.c_str());
  if (t.duration_s > 0) {
    std::fprintf(out, "  requests            %6lld  (%d clients for %.0f s)\n", requests, t.clients, t.duration_s);
  } else {
    std::fprintf(out, "  requests            %6lld  (%d clients x %d)\n", requests, t.clients, t.requests_per_client);
  }
  std::fprintf(out, "  by reference        %6lld  (POST /bookings: the key is the body's booking_reference)\n",
               f.bookings);
  std::string statuses;
  for (const auto& [status, n] : f.final_statuses) statuses += "  " + std::to_string(status) + ": " + std::to_string(n);
  std::fprintf(out, "  final answers      %s\n", statuses.empty() ? "  none" : statuses.c_str());
  std::fprintf(out, "  retries             %6lld\n", t.retries);
  std::fprintf(out, "  409s                %6lld\n", t.conflicts);
  std::fprintf(out, "  503s                %6lld\n", t.unavailable);
  std::fprintf(out, "  500s (retryable)    %6lld\n", t.internal_errors);
  std::fprintf(out, "  network errors      %6lld\n", t.network_errors);
  std::fprintf(out, "  replays             %6lld  (identical %lld)\n", t.replays, f.replays_identical);
  std::fprintf(out, "  restarts            %6lld\n", t.restarts);
  std::fprintf(out, "  charges             %6lld\n", f.charges);
  std::fprintf(out, "  left to the worker  %6lld  (finished by the worker %lld, never reached the service %lld)\n",
               t.abandoned, f.finished_by_worker, f.never_recorded);
  if (f.payments_checked) {
    std::fprintf(out, "  payment states      %6lld  match the ledger via webhooks (%lld refunded; drained in %.1f s)\n",
                 f.payments_matched, f.refunds, f.payments_drained_s);
  }
  if (t.crash_points) PrintCrashDeaths(out, t);
  std::fprintf(out, "  checked             %6lld  (requests whose key row, ride and charge were checked)\n", f.checked);
  std::fprintf(out, "  elapsed             %6.1f s\n", t.elapsed_s);
  const std::vector<std::string> violations = ChaosFailures(t, f);
  for (std::size_t i = 0; i < violations.size() && i < max_violations; ++i) {
    std::fprintf(out, "  VIOLATED: %s\n", violations[i].c_str());
  }
  if (violations.size() > max_violations) {
    std::fprintf(out, "  ... and %zu more violations\n", violations.size() - max_violations);
  }
  if (violations.empty()) {
    std::fprintf(out, "chaos: PASS: every invariant holds (%lld requests, %lld restarts, seed %u)\n", requests,
                 t.restarts, t.seed);
  } else {
    std::fprintf(out, "chaos: FAIL: %zu invariant violations (seed %u; --seed %u replays its random choices)\n",
                 violations.size(), t.seed, t.seed);
  }
  std::fflush(out);
}

}  // namespace ride_booking
