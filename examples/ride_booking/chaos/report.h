// The chaos demo's end: waiting for the re-drive worker, checking the
// invariants against the database and the gateway's ledger, and the report.
//
// Only this run's rows are looked at: every key of the run is a UUIDv7 at or
// above the run's first key (ChaosFirstKey), bare or as "book_ride:<key>"
// for a booking by reference (see ChaosStoredKey), and the ledger is the
// gateway's, whose data
// directory is fresh for each run. The invariants, per logical request:
//   - its key row exists (unless no attempt ever reached the service), for
//     account user_<id>, and is finished;
//   - exactly one ride carries its key (none if the key row does not exist);
//   - at most one ledger charge carries its provider key "<stable_id>:charge";
//   - the answer the client got is the stored response;
//   - a 201 names a charge that is in the ledger, under this key's provider
//     key, and on its ride;
//   - the declined user (13) ends with 402 and no charge;
//   - the replay got the same status and body, with Idempotent-Replayed: true.
// And for the ledger: every charge belongs to a key of this run whose ride
// carries that charge id. The webhook invariant (payments.h) is checked
// by the caller and added to the findings: every charge's payment state in
// ride_payments matches the ledger (succeeded, or refunded).
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_REPORT_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_REPORT_H_

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include <vector>
#include "phasekey/data_protection.h"

#include "chaos/client.h"
#include "phasekey/status.h"

namespace ride_booking {

// What the checks found.
struct ChaosFindings {
  std::vector<std::string> violations;  // one line each, naming the key
  long long checked = 0;                // logical requests whose key row was found and checked
  long long charges = 0;                // ledger entries
  long long finished_by_worker = 0;     // abandoned by the client, finished anyway
  long long never_recorded = 0;         // abandoned before any attempt reached the database
  long long replays_identical = 0;
  long long bookings = 0;                   // logical requests made by reference (POST /bookings)
  std::map<int, long long> final_statuses;  // final status -> logical requests (client's or stored)
  // The webhook invariant, when checked (payments_checked).
  bool payments_checked = false;
  long long payments_matched = 0;  // charges whose payment state matches the ledger
  long long refunds = 0;           // refunded charges in the ledger
  double payments_drained_s = 0;   // how long the deliveries took to converge after the run
};

// What the run counted, for the report.
struct ChaosTotals {
  unsigned seed = 0;
  std::string run_id;
  std::string gateway;  // where the gateway served: "https://127.0.0.1:PORT" or "http://..."
  int clients = 0;
  int requests_per_client = 0;  // 0 in a run bounded by time
  double duration_s = 0;        // a run bounded by time: its length
  long long requests = 0;       // logical requests made
  long long retries = 0, conflicts = 0, unavailable = 0, internal_errors = 0, network_errors = 0;
  long long replays = 0, abandoned = 0, restarts = 0;
  bool crash_points = false;                      // the soak: crash points armed
  std::map<std::string, long long> crash_deaths;  // "<process> at <point>" -> deaths
  std::vector<std::string> unexpected_deaths;     // children that died otherwise (each a violation)
  double elapsed_s = 0;
};

// Polls the database every 250 ms until no key of the run (those from
// `first_key`, ChaosFirstKey) is still active,
// until `timeout`, or until `on_poll` (called with the number still active
// after each poll) returns false. Returns the number still active at the
// end (0: all settled), or the database error.
phasekey::Result<long long> WaitForRunKeys(const std::string& db_url, const std::string& first_key,
                                           std::chrono::milliseconds timeout,
                                           const std::function<bool(long long)>& on_poll);

// Maps the engine's provider key ("<stable_id>:charge") to the
// "idempotency_key" the gateway's ledger shows for its charge (the key as the
// provider adapter fitted it, or its merchant reference; RideCharger).
using LedgerKeyFn = std::function<std::string(const std::string& provider_key)>;

// Checks the invariants above. `ledger_json` is the body of the gateway's
// GET /_ledger; `ledger_key` (empty: the provider key itself) says how its
// keys relate to the engine's. Database errors and an unparsable ledger are
// errors; broken invariants are findings. Stored responses sealed by the
// services are opened with `encryption` (the services' keys); without them
// a sealed response cannot match the answer.
phasekey::Result<ChaosFindings> CheckChaosRun(const std::string& db_url, const std::string& first_key,
                                              const std::vector<ChaosRequestRecord>& records,
                                              const std::string& ledger_json, const LedgerKeyFn& ledger_key = {},
                                              const phasekey::EncryptionOptions& encryption = {});

// Why the run fails, one line each: every violation, every unexpected
// death, and, when no request's key row was checked, that the run checked
// nothing (a run that verified no ride proves nothing, so it cannot pass).
// Empty: the run passes. The report's verdict and the exit status both
// come from here.
std::vector<std::string> ChaosFailures(const ChaosTotals& totals, const ChaosFindings& findings);

// Prints the counts, then every failure of ChaosFailures (at most
// `max_violations`, then how many more), then one last line:
// "chaos: PASS ..." or "chaos: FAIL ...".
void PrintChaosReport(std::FILE* out, const ChaosTotals& totals, const ChaosFindings& findings,
                      std::size_t max_violations = 50);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_REPORT_H_
