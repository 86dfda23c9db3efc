// ChaosHistory: the history a chaos run leaves behind, for a checker that
// shares nothing with this harness (tests/history/check_history.py;
// docs/reliability.md, "The history and its checker").
//
// A folder of files, each JSON lines unless said otherwise:
//   history.jsonl   the run's events, in the order written:
//     {"type": "run", ...}        the run's settings (first line)
//     {"type": "attempt", ...}    one client attempt: "key" (as the service
//        stores it), "client", "request", "send" ("first" or "replay"),
//        "attempt" (1-based within that Send), "fingerprint" (SHA-256 of
//        the canonical request body), "start_ms" (when the client began
//        it: the Send's start or the previous attempt's end), "sent_ms"
//        (its request written; null if it never was), "end_ms",
//        "transport" ("answered" or how it failed), "status" (0 unless
//        answered), "body_sha256" (of the answer's body; null unless
//        answered), "replayed", "retry" (the client will retry);
//     {"type": "request", ...}    a logical request's end: "key",
//        "client", "request", "outcome" ("answered" or "abandoned");
//     {"type": "fault", ...}      "kind" ("kill", "restart", "died"; the
//        extension point for other nemeses: a pause, a partition, a clock
//        jump each add a kind: nemesis.h), "process", "at_ms", "detail";
//     {"type": "end", ...}        the clients are done (last line).
//   keys.jsonl      the run's key rows after the drain: "key", "account",
//                   "stable_id", "state", "recovery_point", "attempts",
//                   "response_status", "response_sha256" (null when the
//                   body is sealed), "fingerprint".
//   rides.jsonl     the run's rides: "key", "user_id", "charge_id", "ride_id".
//   receipts.jsonl  the receipts sent for them so far: "job_id", "ride_id",
//                   "charge_id".
//   ledger.json     the gateway's GET /_ledger (its charges).
//   gateway-ledger.jsonl, gateway-operations.jsonl   copies of the
//                   gateway's ledger file and operations journal
//                   (fake_gateway/ledger.h, fake_gateway/operations.h).
// Times are Unix milliseconds of the wall clock, with a fraction.
//
// Thread-safety: every method may be called concurrently.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HISTORY_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HISTORY_H_

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "phasekey/status.h"

namespace ride_booking {

// Now, as a history stamps it: Unix milliseconds with microseconds.
double ChaosHistoryNowMs();
// SHA-256 of `data`, lowercase hex.
std::string ChaosSha256Hex(std::string_view data);
// The planted bug the services run with (PHASEKEY_PLANTED_BUG, inherited by
// every child; only a build with crash points reads it), "" for none.
std::string ChaosPlantedBug();

class ChaosHistory {
 public:
  // Creates `dir` if needed and starts history.jsonl in it (truncated).
  static phasekey::Result<std::unique_ptr<ChaosHistory>> Open(const std::string& dir);
  ~ChaosHistory();
  ChaosHistory(const ChaosHistory&) = delete;
  ChaosHistory& operator=(const ChaosHistory&) = delete;

  // Appends one line to history.jsonl (flushed). `event` must be an object
  // with a "type".
  void Write(const nlohmann::json& event);
  // A fault event of `kind` at this moment.
  void Fault(const std::string& kind, const std::string& process, const std::string& detail = "");

  // Writes keys.jsonl and rides.jsonl: the run's key rows and rides (those
  // from `first_key` on, kChaosRunKeys). Database errors are errors.
  phasekey::Status DumpRows(const std::string& db_url, const std::string& first_key, bool sealed) const;
  // The end of a run, after the drain: the end line, then the rows
  // (DumpRows), `ledger` (GET /_ledger) as ledger.json and the gateway's
  // files from `gateway_dir` (CopyGatewayFiles). Says where on stderr.
  phasekey::Status Finish(const std::string& db_url, const std::string& first_key, bool sealed,
                          const std::string& ledger, const std::string& gateway_dir);
  // Writes `text` to `name` in the folder.
  phasekey::Status WriteFile(const std::string& name, const std::string& text) const;
  // Copies the gateway's ledger and operations journal from its data folder.
  phasekey::Status CopyGatewayFiles(const std::string& gateway_dir) const;

  const std::string& dir() const { return dir_; }

 private:
  ChaosHistory(std::string dir, std::FILE* file) : dir_(std::move(dir)), file_(file) {}
  const std::string dir_;
  std::mutex mu_;
  std::FILE* file_;  // guarded by mu_
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HISTORY_H_
