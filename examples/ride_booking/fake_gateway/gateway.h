// Gateway: a payment provider's charges API without any transport, so tests
// can drive it directly and server.cc only moves bytes. Which provider it
// imitates is its Dialect (dialect.h; GatewayOptions::dialect); the routes
// below are the gateway's own, and the Stripe dialect's.
//
// Routes of the stripe dialect (the query string is ignored but by the search):
//   POST /v1/charges  form-encoded amount, currency, customer, description,
//                     metadata[...] (see charge_request.h); optional
//                     Idempotency-Key header of 1..255 bytes (valid UTF-8, no
//                     control characters). Answers:
//     200  the charge object (charge made), with its metadata, which the
//          ledger keeps for the search below
//     402  card_error/card_declined for customer 13 (not a charge)
//     400  invalid_request_error: bad parameters or key (nothing stored)
//     400  idempotency_error: the key was used with other parameters
//     409  idempotency_error/idempotency_key_in_use: the key is in flight
//     500  api_error: injected failure or ledger write failure (nothing
//          charged, nothing stored: a retry with the same key runs again)
//     With a key, 200 and 402 are stored (durably, before answering) and
//     replayed byte for byte, with Idempotent-Replayed: true, to a request
//     with the same key and parameters until `retention` has passed; after
//     that the key is forgotten and a reuse charges again, as Stripe does.
//     Without a key every request executes.
//   POST /v1/payment_intents, GET /v1/payment_intents/search: PaymentIntents
//                     created and confirmed at once (dialect_stripe.cc).
//   POST /v1/refunds  form-encoded charge=ch_... or payment_intent=pi_...,
//                     optional amount (the whole amount only), reason and
//                     metadata[...]; optional Idempotency-Key as for charges
//                     (one key space). Refunds the whole payment. Answers 200
//                     with the refund object (stored durably under the key
//                     before answering, and replayed like a charge), 404
//                     resource_missing for an unknown payment, 400
//                     charge_already_refunded, 400 invalid_request_error for
//                     a bad request; 500 api_error when the ledger write
//                     fails. Faults do not apply.
// Every dialect refunds, in its provider's shape (its file says how), through
// the same ledger: a refund is of a whole payment, once.
//   Lookups (charges are kept for good, whatever their key's retention;
//   faults do not apply):
//   GET /v1/charges/search?query=metadata['K']:'V'[&limit=N]  Stripe's
//        Search API for charges, for one metadata clause (single or double
//        quotes; a backslash escapes the next character). 200 {"object":
//        "search_result", "url": "/v1/charges/search", "has_more", "data":
//        [charge objects whose metadata K is exactly V, newest first, at most
//        N (1..100, default 10)], "next_page": null}; "data" is empty when
//        nothing matches. 400 invalid_request_error for a missing or other
//        query, a bad limit, or `page` (no pagination here). A charge is
//        searchable GatewayOptions::lookup_lag after it was made (default:
//        at once; Stripe's index lags up to a minute, an hour in outages).
//   GET /v1/charges/{id}  200 the charge object, or 404 resource_missing.
//   GET /v1/payment_intents/{id}  200 the paid intent, or 404
//        resource_missing (unpaid intents are not kept). Retrieves are
//        read-after-write: never lagged.
// The other dialects' routes are described in their files
// (dialect_<name>.cc). For every dialect:
//   GET  /_ledger     every charge made, oldest first (stripe_json.h).
//   GET  /_faults     the current Faults as JSON.
//   POST /_faults     merges a JSON object into the Faults (faults.h); 200
//                     with the new settings, 400 if invalid.
//   POST /_forget_keys  test-only: forgets, durably, every answer stored
//                     under an idempotency key so far, as if their retention
//                     had passed (a provider forgets keys, not payments):
//                     a reuse of such a key executes again. Charges, refunds
//                     and every lookup (Stripe's search and retrieve,
//                     Moyasar's payment by id, HyperPay's query) are kept.
//                     The body is ignored. 200 {"forgotten_before_ms": T}:
//                     answers stored before T (Unix ms, the gateway's clock
//                     + 1 ms) are forgotten; an answer stored later, by a
//                     request still executing, is kept. 500 api_error when
//                     the ledger write fails.
//   Anything else: 404, or 405 for a known path with another method.
// With GatewayOptions::secret set, every provider route (not the /_ ones)
// answers 401 authentication_error unless the request carries the secret the
// way one of the dialects sends it: Authorization "Bearer <secret>", "Basic"
// with base64("<secret>:") (Moyasar), the raw secret (PayTabs), or X-API-Key
// (Adyen). The answer never quotes what it got.
// The faults apply to every dialect's charges; lookups have one fault of
// their own (Faults::lookup_fail_rate) and the lag (lookup_lag).
//
// Thread-safety: Handle may be called from many threads at once; the
// latency fault sleeps on the calling thread.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_GATEWAY_H_
#define RIDE_BOOKING_FAKE_GATEWAY_GATEWAY_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fake_gateway/charge_request.h"
#include "fake_gateway/dialect.h"
#include "fake_gateway/faults.h"
#include "fake_gateway/ledger.h"
#include "fake_gateway/operations.h"

namespace fake_gateway {

using Clock = std::function<std::chrono::system_clock::time_point()>;

struct GatewayOptions {
  // Where the ledger lives (created if missing). Required.
  std::filesystem::path data_dir;
  // How long a stored response stays replayable. Stripe prunes keys "after
  // they're at least 24 hours old", so 24 h is what a client may rely on.
  std::chrono::seconds retention = std::chrono::hours(24);
  // The faults in force at start-up; validated by Open.
  Faults faults = {};
  // Seeds the dice of the fail and drop faults (charge ids use a separate,
  // unseeded generator so they stay unique across restarts).
  uint64_t seed = 0;
  // Time source for "created" and retention; null means system_clock::now.
  // Tests pass a fake to expire keys without sleeping (the binary has none:
  // tests of it use POST /_forget_keys).
  Clock clock = nullptr;
  // Which provider's API to imitate: one of DialectNames(). Open fails on
  // another name.
  std::string dialect = "stripe";
  // The API credential every provider route requires; empty: none checked.
  std::string secret = {};
  // Called after each charge or refund is durably in the ledger, before it
  // is answered (webhook_sender.h turns entries into events). Runs on the
  // request's thread; must be thread-safe and quick. Null: nobody is told.
  std::function<void(const LedgerEntry&)> on_recorded = nullptr;
  // How long after a charge is recorded the searches and queries start to
  // list it (ChargeDesk::Searchable): Stripe's search index lags "less than
  // a minute" normally and "up to an hour" during outages. 0: at once. A
  // retrieve by id is never lagged. Must not be negative.
  std::chrono::milliseconds lookup_lag{0};
};

class Gateway final : public ChargeDesk {
 public:
  // Opens the ledger in options.data_dir (replaying earlier runs). On
  // failure returns nullptr and sets *error.
  static std::unique_ptr<Gateway> Open(GatewayOptions options, std::string* error);

  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Answers one request. `target` is the request target ("/v1/charges?x").
  GatewayResponse Handle(std::string_view method, std::string_view target, const Headers& headers,
                         std::string_view body);

  Faults faults() const;

  // ChargeDesk, for the dialect.
  GatewayResponse Charge(const Dialect& dialect, const ParsedCharge& charge) override;
  std::optional<StoredResponse> Stored(const std::string& key) override;
  std::optional<StoredResponse> Recorded(const std::string& key) const override;
  std::vector<ChargeRecord> Charges() const override;
  std::optional<ChargeRecord> ChargeById(const std::string& id) const override;
  std::vector<ChargeRecord> Searchable() const override;
  std::vector<ChargeRecord> SearchableWithMetadata(const std::string& name, const std::string& value) const override;
  bool LookupFails() override;
  GatewayResponse Refund(const Dialect& dialect, const ParsedRefund& refund) override;
  // Every refund made, oldest first.
  std::vector<RefundRecord> Refunds() const;

 private:
  Gateway(GatewayOptions options, std::unique_ptr<Ledger> ledger, std::unique_ptr<Dialect> dialect);

  // Journals one charge request's fate (operations.h); `response` is what is sent.
  void Journal(std::string_view op, const std::optional<std::string>& key, const GatewayResponse& response,
               const std::optional<std::string>& charge_id = std::nullopt);

  // Runs a validated charge whose key (if any) is held in flight.
  GatewayResponse Execute(const Dialect& dialect, const ParsedCharge& charge);
  LedgerEntry Outcome(const Dialect& dialect, const ParsedCharge& charge);
  GatewayResponse PostFaults(std::string_view body);
  // POST /_forget_keys.
  GatewayResponse ForgetKeys();
  // Whether `headers` carry options_.secret as a dialect sends it.
  bool Authenticated(const Headers& headers) const;
  bool Roll(double rate);
  std::string NewChargeId(std::string_view prefix);
  int64_t NowMs() const;

  const GatewayOptions options_;
  const std::unique_ptr<Ledger> ledger_;
  const std::unique_ptr<Dialect> dialect_;
  std::unique_ptr<OperationJournal> operations_;  // null: the file could not be opened
  mutable std::mutex mu_;                         // lock order: mu_ before the Ledger's locks
  Faults faults_;                                 // guarded by mu_
  std::mt19937_64 fault_dice_;                    // guarded by mu_
  std::mt19937_64 id_generator_;                  // guarded by mu_
  std::set<std::string, std::less<>> in_flight_;  // keys executing; guarded by mu_
  std::condition_variable in_flight_done_;        // signalled when a key leaves in_flight_
  std::mutex refund_mu_;                          // one refund at a time; before mu_
};

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_GATEWAY_H_
