// Operations: the gateway's journal of every charge request it was asked
// to make, whatever became of it, for a chaos run's history
// (docs/reliability.md, "The history and its checker"). The ledger keeps
// what was executed; this file also keeps what was refused or replayed.
//
// One JSON object per line in <data_dir>/operations.jsonl, appended (never
// rewritten) and flushed before the request is answered:
//   {"at_ms": 1700000000000, "op": "executed" | "replayed" | "reused" |
//    "in_flight" | "injected_failure", "key": "<Idempotency-Key>" | null,
//    "status": 200, "charge_id": "ch_..." | null, "dropped": false}
// "executed": the request ran (a charge, or a decline); "replayed": the
// stored response was sent again; "reused": refused, the key was first used
// with other parameters; "in_flight": refused, the key is executing;
// "injected_failure": the fail fault answered 500 before charging.
// "dropped": the response was then dropped (the drop fault). Not synced to
// disk: an audit for tests, unlike the ledger. A write that fails is
// ignored (the audit loses a line; the gateway keeps answering).
//
// Thread-safety: Record may be called concurrently.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_OPERATIONS_H_
#define RIDE_BOOKING_FAKE_GATEWAY_OPERATIONS_H_

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

namespace fake_gateway {

struct Operation {
  int64_t at_ms = 0;
  std::string op;
  std::optional<std::string> key;
  int status = 0;
  std::optional<std::string> charge_id;
  bool dropped = false;
};

class OperationJournal {
 public:
  // Opens <dir>/operations.jsonl for appending; nullptr (no journal) if it
  // cannot be opened.
  static std::unique_ptr<OperationJournal> Open(const std::filesystem::path& dir);
  ~OperationJournal();
  OperationJournal(const OperationJournal&) = delete;
  OperationJournal& operator=(const OperationJournal&) = delete;

  void Record(const Operation& op);

 private:
  explicit OperationJournal(std::FILE* file) : file_(file) {}
  std::mutex mu_;
  std::FILE* file_;  // guarded by mu_
};

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_OPERATIONS_H_
