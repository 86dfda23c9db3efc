// ProviderAdapter: what phasekey knows about one payment gateway, and the
// provider-neutral values it works with.
//
// An adapter is pure: it builds requests and reads answers, it never does I/O
// (phasekey/phases/http_client.h does; phasekey/phases/charge_phase.h puts the
// two together as a foreign phase). It knows
//   - where the gateway reads an idempotency key (a header, a body field, or
//     nowhere) and how to fit phasekey's provider key into the gateway's
//     limits deterministically (FitKey);
//   - how long the gateway keeps a key (AdapterInfo::key_retention);
//   - how to build a charge, a refund and a status query by merchant
//     reference, and how to classify each answer;
//   - for gateways with a list API, how to list the operations created
//     since a time (for `phasekey keys reconcile` after a restore).
// The facts behind each adapter, with their sources and the safer reading
// chosen where sources disagree, are in docs/providers.md.
//
// Adapters are immutable after construction and thread-safe.
#ifndef PHASEKEY_PHASES_PROVIDER_ADAPTER_H_
#define PHASEKEY_PHASES_PROVIDER_ADAPTER_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "phasekey/phases/key_fitting.h"
#include "phasekey/status.h"

namespace phasekey::phases {

// A payment to make, in terms every adapter understands.
struct PaymentIntent {
  // The amount in the currency's ISO 4217 minor unit (cents for USD, fils for
  // KWD, yen for JPY). Adapters convert it to the gateway's format and refuse
  // (InvalidArgument) amounts the gateway cannot express exactly.
  std::int64_t amount_minor = 0;
  std::string currency;  // ISO 4217 alphabetic code, any case ("usd", "KWD")
  // The gateway's id of the customer or of the saved payment source to charge;
  // each adapter's factory comment says which (adapters.h).
  std::string customer_or_source;
  // A second id some gateways need together with customer_or_source (Adyen's
  // storedPaymentMethodId, Stripe v2's payment_method, Square's customer_id,
  // Tap's customer id, PayTabs' tran_ref of the token's first payment, Amazon
  // Payment Services' agreement_id). Empty when the adapter needs none.
  std::string source_detail;
  // The charge's description where the gateway has one (statement or
  // dashboard text); may be empty.
  std::string description;
  // Your own order reference, sent where the gateway has a spare field for
  // it. Informational only: reconciliation always uses the reference the
  // adapter derives from the provider key (ProviderAdapter::ReferenceFor).
  std::string reference;
  std::string customer_email;  // required by Amazon Payment Services only
};

// A refund of (part of) a payment made through the same adapter.
struct RefundIntent {
  std::string payment_id;         // the id a successful charge classified to
  std::int64_t amount_minor = 0;  // how much to refund, as PaymentIntent::amount_minor
  std::string currency;           // as PaymentIntent::currency; the payment's currency
  std::string reason;             // sent where the gateway takes one; may be empty
};

// An HTTP request for a gateway, relative to its base URL.
struct ProviderRequest {
  std::string method = "POST";                               // the HTTP method
  std::string path;                                          // origin-form target under the base URL: "/v1/charges?x=1"
  std::vector<std::pair<std::string, std::string>> headers;  // Content-Type excluded
  std::string body;                                          // exact bytes, in content_type's format
  std::string content_type;                                  // empty when there is no body
  // Whether the HTTP client may send the request once more on a new
  // connection when a kept-alive connection turns out closed before any byte
  // of the answer arrived (see NewBeastHttpClient). Only when a repeat is
  // answered as the first: the charge and refund phases set it when the
  // provider key deduplicates the resend, lookups (reads) always. Default
  // false.
  bool resend_if_connection_stale = false;

  // The value of the first header named `name` (ASCII case-insensitive), or
  // nullptr.
  const std::string* FindHeader(std::string_view name) const;
};

// What came back, and how far the request got.
struct ProviderAnswer {
  // How far the request got: only kAnswered carries an HTTP answer.
  enum class Transport {
    kAnswered,      // a complete HTTP response was read (status, headers, body)
    kNotSent,       // no byte of the request reached the network: resolution,
                    // connection or TLS failed, or the write failed at once
    kSentNoAnswer,  // the request was (perhaps partly) sent, then the call
                    // timed out or the connection broke before the answer
  };
  Transport transport = Transport::kAnswered;                // how far the request got
  int status = 0;                                            // kAnswered only
  std::vector<std::pair<std::string, std::string>> headers;  // kAnswered only, as received
  std::string body;                                          // kAnswered only: exact bytes
  std::string error;                                         // kNotSent / kSentNoAnswer: what went wrong

  // The value of the first header named `name` (ASCII case-insensitive), or
  // nullptr.
  const std::string* FindHeader(std::string_view name) const;
};

// How an answer to a charge (or refund) reads.
struct Classification {
  // What the answer means for the payment.
  enum class Kind {
    kSucceeded,       // the payment exists: payment_id names it
    kTerminal,        // final and stored: a decline, or a refusal of our request
    kRetryable,       // nothing happened that matters; send again (same key)
    kOutcomeUnknown,  // it may have happened: reconcile or resend with the key
  };
  Kind kind = Kind::kRetryable;  // the verdict; kRetryable until classified
  std::string payment_id;        // kSucceeded
  std::string status;            // the gateway's own status word, when it gave one
  bool declined = false;         // kTerminal: the payer's instrument was declined
                                 // (402), rather than our request refused (502)
  std::string code;              // the gateway's error or result code
  std::string message;           // a short human-readable detail
};

// The answer to a status query by merchant reference.
struct Lookup {
  // What the query found.
  enum class Kind {
    kFound,     // a payment exists; `payment` says how it ended (kSucceeded or
                // kTerminal for a declined one)
    kNotFound,  // the gateway positively reports no payment that took money
    kUnknown,   // anything else: a failed query, a payment still in progress
  };
  Kind kind = Kind::kUnknown;  // the verdict; kUnknown unless the answer says more
  Classification payment;      // kFound: the payment, read like a charge's answer
  std::string message;         // a short human-readable detail
};

// One operation a gateway reports in a list (ProviderAdapter::ParseList).
struct ProviderOperation {
  std::string id;         // the gateway's id of the payment: "ch_...", "pi_..."
  std::string reference;  // the merchant reference phasekey sent (ReferenceFor); empty when none
  // PaymentIntent::reference as sent, where the gateway keeps it (Stripe's
  // metadata[order_reference]); empty when none.
  std::string order_reference;
  std::int64_t amount = 0;   // as the gateway reports it, in its own minor unit
  std::string currency;      // as the gateway reports it
  std::int64_t created = 0;  // Unix seconds, by the gateway's clock
  std::string status;        // the gateway's own status word ("succeeded", "failed", ...)
};

// One page of a list of operations.
struct OperationPage {
  std::vector<ProviderOperation> operations;  // in the gateway's order
  std::string next_cursor;                    // for the next BuildList(); empty: this was the last page
};

// Where the gateway reads an idempotency key.
enum class KeyPlacement { kHeader, kBodyField, kNone };

// "header", "body", "none".
std::string_view KeyPlacementName(KeyPlacement placement);

// The facts the CLI prints and the charge phase relies on.
struct AdapterInfo {
  std::string name;                                // stable id: "stripe_v1", "hyperpay", ...
  std::string display_name;                        // "Stripe (API v1)"
  KeyPlacement placement = KeyPlacement::kHeader;  // where the key goes
  std::string key_field;                           // header name or body field path; empty for kNone
  KeyRules key_rules;                              // meaningful unless placement is kNone
  // How long the gateway keeps a key. 0: no key at all. seconds::max():
  // documented as kept indefinitely.
  std::chrono::seconds key_retention{0};
  bool retention_documented = true;  // false: our safe default, configurable
  // True when, within the retention, a resend under the same key cannot
  // charge twice whatever the first answer was. False for gateways that
  // keep only some answers (Checkout.com caches 2xx only, so a resend after
  // a 5xx runs again) and for gateways without keys.
  bool key_replays_all_answers = true;
  std::string retention_note;   // one line: the source's wording
  std::string conflict;         // one line: in-flight and reuse behaviour
  std::string reference_field;  // where ReferenceFor() goes in a charge
  KeyRules reference_rules;     // what ReferenceFor() must fit
  bool has_lookup = false;      // BuildLookup/ParseLookup are supported
  // The lookup's consistency window: how long after an operation the lookup
  // may still not see it. 0: read-after-write (a retrieve by id). Until the
  // window has passed since the phase may first have been attempted, a
  // "not found" proves nothing: the charge phase sends again only if the
  // key makes the resend safe, and otherwise looks again later
  // (charge_phase.h). Each adapter's .cc file explains its default;
  // AdapterOptions::lookup_window overrides it. Meaningful only with
  // has_lookup.
  std::chrono::milliseconds lookup_window{0};
  std::string reconciliation;  // one line: the status query used
  // BuildList/ParseList are supported: the gateway can list the operations
  // created since a time, whatever their reference (`phasekey keys
  // reconcile`). An adapter without it cannot tell what a restored database
  // forgot; the command says so rather than report it clean.
  bool has_list = false;
  std::string listing;               // one line: the list API used; empty without has_list
  std::vector<std::string> sources;  // vendor documentation URLs
};

// One gateway (see the file comment): immutable, thread-safe, no I/O. Made
// by a factory of adapters.h; a new gateway derives from it and implements
// BuildCharge() and Classify().
class ProviderAdapter {
 public:
  // For derived adapters: `info` holds the gateway's facts, and `base_url`
  // (ParseBaseUrl's form) is what request paths are appended to. Neither is
  // checked here.
  ProviderAdapter(AdapterInfo info, std::string base_url);
  virtual ~ProviderAdapter() = default;
  ProviderAdapter(const ProviderAdapter&) = delete;
  ProviderAdapter& operator=(const ProviderAdapter&) = delete;

  // The gateway's facts, as given at construction.
  const AdapterInfo& info() const { return info_; }
  // info().name: the adapter's stable id.
  const std::string& name() const { return info_.name; }
  // "https://api.stripe.com", or what the options set (tests: loopback).
  const std::string& base_url() const { return base_url_; }

  // The idempotency key to send for phasekey's `provider_key`
  // ("<stable id>:<phase>"): deterministic, within info().key_rules, and
  // distinct for distinct inputs (see FitToRules). Empty for kNone.
  virtual std::string FitKey(std::string_view provider_key) const;
  // The merchant reference for `provider_key`, within
  // info().reference_rules: what the charge carries and what the lookup
  // searches for. Deterministic.
  virtual std::string ReferenceFor(std::string_view provider_key) const;

  // The charge request. InvalidArgument when the intent cannot be expressed
  // (an amount the gateway's format cannot carry, a missing id or option).
  virtual Result<ProviderRequest> BuildCharge(const PaymentIntent& intent, std::string_view provider_key) const = 0;
  // Reads the answer to a charge built by BuildCharge() (see
  // Classification): never fails, since every answer, a broken one
  // included, has a reading (kOutcomeUnknown when in doubt).
  virtual Classification Classify(const ProviderAnswer& answer) const = 0;

  // The refund request, keyed like a charge by `provider_key` where the
  // gateway takes keys on refunds. FailedPrecondition when the adapter has no
  // refund.
  virtual Result<ProviderRequest> BuildRefund(const RefundIntent& refund, std::string_view provider_key) const;
  // Reads a refund answer. The default: 2xx with a JSON "id" succeeds, and
  // transport failures, 429 and 5xx follow the charge rules.
  virtual Classification ClassifyRefund(const ProviderAnswer& answer) const;

  // The status query by merchant reference (ReferenceFor). FailedPrecondition
  // unless info().has_lookup.
  virtual Result<ProviderRequest> BuildLookup(std::string_view reference) const;
  // Reads the answer to BuildLookup()'s request. Without a lookup
  // (the default): kUnknown, saying so in `message`.
  virtual Lookup ParseLookup(const ProviderAnswer& answer) const;

  // The request for one page of the operations (charges or payments, as the
  // adapter makes them) created at or after `created_after` (whole seconds;
  // the gateway's clock), continuing after `cursor` (empty: the first page;
  // else OperationPage::next_cursor of the page before). Every operation
  // created since then is on some page, whatever its reference, declined
  // ones included where the gateway keeps them. FailedPrecondition unless
  // info().has_list.
  virtual Result<ProviderRequest> BuildList(std::chrono::system_clock::time_point created_after,
                                            std::string_view cursor) const;
  // Reads the answer to BuildList()'s request: Retryable for a failed or
  // unreadable answer (nothing can be concluded from it), FailedPrecondition
  // without a list.
  virtual Result<OperationPage> ParseList(const ProviderAnswer& answer) const;

 private:
  AdapterInfo info_;
  std::string base_url_;
};

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_PROVIDER_ADAPTER_H_
