// Dialect: how one payment provider's API looks on the wire, for the fake
// gateway. Each provider the phases/ adapters speak to has one, in its own
// file (dialect_<name>.cc); the Gateway keeps what they share: the ledger,
// the faults, and the idempotency store (keys in flight, stored answers,
// retention).
//
// A dialect parses its provider's charge request into a ParsedCharge and hands
// it to ChargeDesk::Charge, which runs it exactly once per key and calls back
// the dialect for every answer it sends (success, decline, injected failure,
// conflicts, replays), so answers always come in the provider's shape.
//
// Dialects are immutable and thread-safe.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_DIALECT_H_
#define RIDE_BOOKING_FAKE_GATEWAY_DIALECT_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fake_gateway/charge_request.h"
#include "fake_gateway/ledger.h"

namespace fake_gateway {

// HTTP header fields in order; names compare case-insensitively.
using Headers = std::vector<std::pair<std::string, std::string>>;

// The value of the first header named `name` (any case), or nullopt.
std::optional<std::string> FindHeader(const Headers& headers, std::string_view name);

struct GatewayResponse {
  int status = 200;
  Headers headers;  // Content-Type included
  std::string body;
  // Close the connection without sending anything (the drop fault). status,
  // headers and body still say what would have been sent, for tests.
  bool drop_connection = false;
};

// application/json response.
GatewayResponse JsonResponse(int status, std::string body);

struct DialectRequest {
  std::string_view method;
  std::string_view path;   // the target up to '?'
  std::string_view query;  // after '?', undecoded; "" when absent
  const Headers& headers;
  std::string_view body;
};

// A charge request as a dialect understood it.
struct ParsedCharge {
  // The idempotency key, where the provider reads one; nullopt when the
  // request carries none (or the provider has no keys).
  std::optional<std::string> key;
  // What the ledger shows as the charge's "idempotency_key": the key, or for
  // providers without keys the merchant reference. Empty: null.
  std::string ledger_key;
  ChargeParams params;     // amount in minor units, lowercase currency
  std::string canonical;   // equal for two requests exactly when they are the same charge
  std::string payment_id;  // the id the payment gets; empty: the gateway picks one
  std::string id_prefix;   // of the id the gateway picks; empty: the dialect's id_prefix()
  // Nothing is paid: the payer's card is declined (customer 13), or the
  // dialect answers another unpaid outcome (Dialect::Declined).
  bool declined = false;
};

// A refund as a dialect understood it: the whole of one payment.
struct ParsedRefund {
  // The idempotency key, where the provider reads one on refunds; nullopt
  // when the request carries none (or the provider takes none).
  std::optional<std::string> key;
  std::string payment_id;
  std::optional<int64_t> amount;  // minor units, when the request names one
  std::string canonical;          // equal for two requests exactly when they are the same refund
};

// Why a refund cannot be made.
enum class RefundProblem {
  kUnknownPayment,   // no payment with that id
  kAlreadyRefunded,  // the payment was refunded before
  kNotWhole,         // an amount other than the payment's: only whole refunds here
};

// What a dialect answers with, before the drop fault.
struct Answer {
  int status = 200;
  std::string body;
};

// What dialects may ask of the gateway. Thread-safe.
class ChargeDesk {
 public:
  virtual ~ChargeDesk() = default;
  // Runs `charge` under the shared idempotency rules and the faults.
  virtual GatewayResponse Charge(const class Dialect& dialect, const ParsedCharge& charge) = 0;
  // The answer stored under `key` within the retention and not forgotten
  // (POST /_forget_keys), if any: what an idempotent replay may send.
  virtual std::optional<StoredResponse> Stored(const std::string& key) = 0;
  // The latest answer ever stored under `key`, however old and even if the
  // key was forgotten: the provider's own record of the payment, for
  // lookups. nullopt if none was ever stored.
  virtual std::optional<StoredResponse> Recorded(const std::string& key) const = 0;
  // Every charge made, oldest first.
  virtual std::vector<ChargeRecord> Charges() const = 0;
  // The charge whose id is `id`, found by the ledger's index; read-after-
  // write, like Charges(). nullopt if none.
  virtual std::optional<ChargeRecord> ChargeById(const std::string& id) const = 0;
  // The charges a search or query may see: those made at least
  // GatewayOptions::lookup_lag ago, oldest first. Lookups by a search
  // (Stripe's search, HyperPay's query) read these; a retrieve by id reads
  // Charges() or Recorded(), which are read-after-write.
  virtual std::vector<ChargeRecord> Searchable() const = 0;
  // Searchable() narrowed to the charges whose metadata[`name`] is `value`
  // (Stripe's search by one metadata clause), found by the ledger's index.
  virtual std::vector<ChargeRecord> SearchableWithMetadata(const std::string& name, const std::string& value) const = 0;
  // Rolls the lookup_fail_rate fault: true when this lookup must fail (the
  // dialect answers Failed) before reading anything.
  virtual bool LookupFails() = 0;
  // Refunds `refund` once per key (one key space with charges): a stored
  // answer is replayed, a refund made is recorded in the ledger before it is
  // answered (Dialect::Refunded), and a refund that cannot be made answers
  // Dialect::RefundRefused, unstored. Faults do not apply.
  virtual GatewayResponse Refund(const class Dialect& dialect, const ParsedRefund& refund) = 0;
};

class Dialect {
 public:
  virtual ~Dialect() = default;

  // "stripe", "adyen", ...
  virtual std::string_view name() const = 0;

  // Answers a request for any path but the gateway's own /_ ones; nullopt for a
  // path the provider does not have (the gateway answers 404).
  virtual std::optional<GatewayResponse> Handle(const DialectRequest& request, ChargeDesk& desk) const = 0;

  // The answers ChargeDesk::Charge sends. Charged and Declined (any unpaid
  // outcome: ParsedCharge::declined) are stored under the key and replayed.
  virtual Answer Charged(const ParsedCharge& charge, const ChargeRecord& record) const = 0;
  virtual Answer Declined(const ParsedCharge& charge, const std::string& payment_id) const = 0;
  // The answer to a refund made, stored under its key and replayed.
  // `payment` is the refunded payment.
  virtual Answer Refunded(const RefundRecord& refund, const ChargeRecord& payment) const = 0;
  // The answer to a refund that cannot be made (not stored).
  virtual GatewayResponse RefundRefused(RefundProblem problem, std::string_view message) const = 0;
  // A retryable failure before anything was charged (fail fault, ledger).
  virtual GatewayResponse Failed(std::string_view message) const = 0;
  // Another request with the same key is executing. Only asked when
  // WaitsForInFlight() is false.
  virtual GatewayResponse InFlight(const std::string& key) const = 0;
  // The key was stored with other parameters. Default: ReplayOf (providers
  // that answer any reuse with the original).
  virtual GatewayResponse Reused(const std::string& key, const StoredResponse& stored) const;
  // A stored answer sent again. Default: the stored status and body.
  virtual GatewayResponse ReplayOf(const std::string& key, const StoredResponse& stored) const;
  // True: a request whose key is in flight waits for it, then gets its
  // stored answer (providers documented only as "returns the original").
  virtual bool WaitsForInFlight() const { return false; }
  // Prefix of the payment ids the gateway picks ("ch_", "pay_", ...).
  virtual std::string_view id_prefix() const { return "ch_"; }
};

// The dialects fake_gateway knows, in --dialect order.
std::vector<std::string> DialectNames();

// The dialect named `name`, or nullptr.
std::unique_ptr<Dialect> NewDialect(std::string_view name);

std::unique_ptr<Dialect> NewStripeDialect();
std::unique_ptr<Dialect> NewAdyenDialect();
std::unique_ptr<Dialect> NewSquareDialect();
std::unique_ptr<Dialect> NewTapDialect();
std::unique_ptr<Dialect> NewMoyasarDialect();
std::unique_ptr<Dialect> NewHyperPayDialect();

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_DIALECT_H_
