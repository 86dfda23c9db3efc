// Ledger: the gateway's durable memory of charges made and of responses
// stored under idempotency keys.
//
// On disk it is one append-only file, <data_dir>/ledger.jsonl, one JSON
// object per line:
//   {"key": "k1" | null, "params": "<canonical params>", "status": 200,
//    "body": "<response body>", "stored_at_ms": 1700000000000,
//    "charge": {"id", "idempotency_key", "amount", "currency", "customer",
//               "description", "created_at", "metadata"?} | null,
//    "refund": {"id", "charge", "amount", "created_at"}}   (only on refunds)
// ("metadata" only when the charge has some), or, written by
// ForgetResponsesBefore, a line of its own:
//   {"forget_responses_before_ms": 1700000000000}
// A line is written with one write(2) and made durable with fdatasync(2)
// before Append returns, so before any response about it is sent. Open
// replays the file. The last line may be torn by a crash during its append
// (it was never acknowledged): it is cut off. A bad line before the last
// means corruption, and Open fails.
//
// The file only grows; expired and forgotten responses are skipped by
// FindResponse, never rewritten, and stay readable through LatestResponse
// (a provider forgets idempotency keys, not the payments it made). Good
// enough for a test gateway, which keeps a few thousand lines per run.
//
// Thread-safety: all methods may be called concurrently.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_LEDGER_H_
#define RIDE_BOOKING_FAKE_GATEWAY_LEDGER_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace fake_gateway {

// A charge actually made. Declines are not charges.
struct ChargeRecord {
  std::string id;  // "ch_..."
  std::optional<std::string> idempotency_key;
  int64_t amount = 0;
  std::string currency;
  std::string customer;
  std::optional<std::string> description;
  int64_t created_at = 0;  // Unix seconds, like Stripe's "created"
  // Stripe's metadata[K] fields, by K (what its charge search matches on);
  // empty for the other dialects.
  std::map<std::string, std::string> metadata = {};
  // When the charge was recorded (Unix ms; the line's stored_at_ms), for the
  // lookups' lag (GatewayOptions::lookup_lag). Not written on its own.
  int64_t recorded_at_ms = 0;
};

// A refund actually made: the whole amount of one charge.
struct RefundRecord {
  std::string id;         // "re_..."
  std::string charge_id;  // "ch_..."
  int64_t amount = 0;
  int64_t created_at = 0;  // Unix seconds
};

// The outcome of a request, as stored under its idempotency key.
struct StoredResponse {
  std::string params;  // CanonicalParams of the request that produced it
  int status = 0;
  std::string body;          // sent byte for byte on every replay
  int64_t stored_at_ms = 0;  // Unix milliseconds
};

// One line of the file. `key` null: a request without Idempotency-Key, whose
// response is recorded for the audit but never replayed.
struct LedgerEntry {
  std::optional<std::string> key;
  StoredResponse response;
  std::optional<ChargeRecord> charge;
  std::optional<RefundRecord> refund;
  // Set only on the line ForgetResponsesBefore writes, which carries nothing
  // else: every response stored before this time (Unix ms) is forgotten.
  std::optional<int64_t> forget_responses_before_ms;
};

class Ledger {
 public:
  // Creates `dir` if needed, opens (or creates) its ledger.jsonl, takes an
  // exclusive flock on it (a second gateway on the same directory fails here
  // rather than interleaving writes) and replays it. On failure returns
  // nullptr and sets *error.
  static std::unique_ptr<Ledger> Open(const std::filesystem::path& dir, std::string* error);

  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;
  ~Ledger();  // Closes the file, releasing the lock.

  // Appends `entry` durably, then makes it visible to FindResponse and
  // Charges. Returns false and sets *error when it could not be made durable;
  // the file's tail is then unknown, so every later Append fails too (the
  // gateway answers 500 until restarted, and the restart replays whatever
  // did reach the disk).
  bool Append(const LedgerEntry& entry, std::string* error);

  // Durably forgets every response stored before `before_ms` (Unix ms), as
  // if their keys had expired: FindResponse no longer returns them, now or
  // after a restart. Charges, refunds and LatestResponse are unaffected.
  // Forgetting never moves back: an earlier `before_ms` than a previous
  // call's changes nothing. Fails like Append.
  bool ForgetResponsesBefore(int64_t before_ms, std::string* error);

  // The latest response stored under `key`, if it was stored at or after
  // `not_before_ms` and not forgotten (ForgetResponsesBefore); nullopt
  // otherwise: the key is unknown or has expired.
  std::optional<StoredResponse> FindResponse(const std::string& key, int64_t not_before_ms) const;

  // The latest response ever stored under `key`, however old and even if
  // forgotten: the provider's record of what the request did (Moyasar's
  // payment by given_id). nullopt if the key was never stored.
  std::optional<StoredResponse> LatestResponse(const std::string& key) const;

  // Every charge made, oldest first.
  std::vector<ChargeRecord> Charges() const;
  // Every refund made, oldest first.
  std::vector<RefundRecord> Refunds() const;
  // The charges whose metadata[`name`] is `value`, oldest first, found by
  // an index: a search costs the same with a long ledger as with a short one.
  std::vector<ChargeRecord> ChargesWithMetadata(const std::string& name, const std::string& value) const;
  // The charge `id` if one was made, and whether it was refunded: indexed.
  std::optional<ChargeRecord> ChargeById(const std::string& id) const;
  bool Refunded(const std::string& charge_id) const;

 private:
  explicit Ledger(int fd);
  bool Replay(std::string* error);
  // Writes `line` durably, then applies `entry` to the index.
  bool AppendLine(const std::string& line, const LedgerEntry& entry, std::string* error);
  void Index(LedgerEntry entry);

  const int fd_;
  // Lock order: file_mu_ before mu_. Holding file_mu_ through fdatasync
  // keeps lines whole and in order without blocking readers of the index.
  std::mutex file_mu_;
  bool broken_ = false;  // an Append failed; guarded by file_mu_
  mutable std::mutex mu_;
  std::vector<ChargeRecord> charges_;  // guarded by mu_
  std::vector<RefundRecord> refunds_;  // guarded by mu_
  // Positions in charges_ by metadata name and value, ascending.
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> by_metadata_;  // guarded by mu_
  std::unordered_map<std::string, std::size_t> by_id_;         // positions in charges_; guarded by mu_
  std::unordered_set<std::string> refunded_;                   // charge ids; guarded by mu_
  std::unordered_map<std::string, StoredResponse> responses_;  // guarded by mu_
  int64_t forgotten_before_ms_ = 0;                            // guarded by mu_
};

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_LEDGER_H_
