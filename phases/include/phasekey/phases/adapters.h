// The twelve gateway adapters and their options.
//
// Each factory returns an immutable adapter (provider_adapter.h). Options
// left empty take the gateway's production base URL; tests point base_url at
// a loopback server. Facts, sources and the safer readings chosen are in
// docs/providers.md; each adapter's .cc file repeats the ones it relies on.
#ifndef PHASEKEY_PHASES_ADAPTERS_H_
#define PHASEKEY_PHASES_ADAPTERS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "phasekey/phases/amazon_pay_signing.h"
#include "phasekey/phases/provider_adapter.h"
#include "phasekey/status.h"

namespace phasekey::phases {

// What every adapter's options hold; each gateway's options add their own.
// Nothing is checked when an adapter is made: a required option left empty
// makes the requests that need it fail with InvalidArgument.
struct AdapterOptions {
  std::string base_url;  // empty: the gateway's production URL
  std::string secret;    // API key, server key or access token
  // Overrides the key retention the adapter assumes. Leave 0 unless your
  // contract with the gateway says otherwise (PayPal extends Orders v2 keys up
  // to 72 h on request; Square and Moyasar publish none).
  std::chrono::seconds key_retention{0};
  // Overrides how long the adapter assumes its lookup may lag behind an
  // operation (AdapterInfo::lookup_window). Leave it unset unless you know
  // better than the documented (or, where nothing is documented, safer)
  // default: a window shorter than the gateway's real lag can charge twice
  // where the gateway takes no key. Adapters without a lookup ignore it.
  std::optional<std::chrono::milliseconds> lookup_window;
};

// Which Stripe API v1 charges through.
enum class StripeV1Api {
  kCharges,         // POST /v1/charges: older accounts and integrations
  kPaymentIntents,  // POST /v1/payment_intents with confirm=true: Stripe's
                    // recommendation for new integrations
};

// Stripe API v1, form-encoded. Charges API (POST /v1/charges):
// customer_or_source is a customer ("cus_...") or a token or source ("tok_",
// "src_", "card_", "ba_"), sent as `customer` or `source`. PaymentIntents
// (POST /v1/payment_intents, confirm=true): customer_or_source is a payment
// method ("pm_...", or a source as above), sent as `payment_method`, or a
// customer, sent as `customer` with source_detail (if any) as
// `payment_method`. Refunds name a "pi_..." payment as payment_intent, any
// other as charge.
struct StripeOptions : AdapterOptions {
  std::string stripe_version;               // Stripe-Version header; empty: not sent (v1)
  StripeV1Api api = StripeV1Api::kCharges;  // v1 only
};
// The Stripe API v1 adapter described above.
std::unique_ptr<ProviderAdapter> NewStripeV1Adapter(StripeOptions options = {});

// Stripe API v2, Off-Session Payments (POST /v2/payments/off_session_payments,
// JSON): customer_or_source is the customer, source_detail the payment method.
// stripe_version defaults to kStripeV2Version.
inline constexpr char kStripeV2Version[] = "2026-04-22.preview";
// The Stripe API v2 adapter described above (`api` is ignored; v2 has no
// refunds here).
std::unique_ptr<ProviderAdapter> NewStripeV2Adapter(StripeOptions options = {});

// Adyen Checkout API (POST /v71/payments): customer_or_source is the
// shopperReference, source_detail the storedPaymentMethodId; a merchant-
// initiated card-on-file payment.
struct AdyenOptions : AdapterOptions {
  std::string merchant_account;  // required
};
// The Adyen adapter described above.
std::unique_ptr<ProviderAdapter> NewAdyenAdapter(AdyenOptions options = {});

// Square Payments API (POST /v2/payments): customer_or_source is the
// source_id (a card on file), source_detail the customer_id.
struct SquareOptions : AdapterOptions {
  std::string location_id;     // optional
  std::string square_version;  // Square-Version header; empty: kSquareVersion
};
// The Square-Version sent when SquareOptions::square_version is empty: the
// API version the adapter was written against.
inline constexpr char kSquareVersion[] = "2025-01-23";
// The Square adapter described above.
std::unique_ptr<ProviderAdapter> NewSquareAdapter(SquareOptions options = {});

// Tap Payments Charges API (POST /v2/charges): customer_or_source is the
// source id (a saved card or token), source_detail the Tap customer id.
struct TapOptions : AdapterOptions {
  std::string redirect_url;  // required by Tap on every charge
};
// The Tap Payments adapter described above.
std::unique_ptr<ProviderAdapter> NewTapAdapter(TapOptions options = {});

// Moyasar Payments API (POST /v1/payments): customer_or_source is a token
// ("token_..."), charged as source {type: token}.
struct MoyasarOptions : AdapterOptions {
  std::string callback_url;  // required by Moyasar on every payment
};
// The Moyasar adapter described above.
std::unique_ptr<ProviderAdapter> NewMoyasarAdapter(MoyasarOptions options = {});

// PayPal Orders v2, single-step create-and-capture (POST /v2/checkout/orders):
// customer_or_source is a vault id, sent as payment_source.<kind>.vault_id.
struct PayPalOptions : AdapterOptions {
  std::string payment_source_kind = "card";  // "card" or "paypal"
};
// The PayPal adapter described above.
std::unique_ptr<ProviderAdapter> NewPayPalAdapter(PayPalOptions options = {});

// Checkout.com Payments API (POST /payments): customer_or_source is a source
// ("src_...", sent as type "id") or a customer ("cus_...", type "customer").
struct CheckoutComOptions : AdapterOptions {
  std::string processing_channel_id;  // optional
};
// The Checkout.com adapter described above.
std::unique_ptr<ProviderAdapter> NewCheckoutComAdapter(CheckoutComOptions options = {});

// Amazon Pay API v2 (POST /v2/charges): customer_or_source is the
// chargePermissionId. Amazon Pay requests must be signed (RSA-PSS over the
// canonical request, amazon_pay_signing.h): the signer runs last on every
// request and adds the authorization, accept, x-amz-pay-date,
// x-amz-pay-host and x-amz-pay-region headers. Set one of
//   signing  the key registered with Amazon Pay (public key id and private
//            key PEM; host and path_prefix must match base_url): the
//            adapter signs with NewAmazonPaySigner(*signing);
//   sign     a signer of your own (e.g. one that asks a key store to sign).
// With neither, requests go unsigned (tests against a fake gateway).
struct AmazonPayOptions : AdapterOptions {
  // The key registered with Amazon Pay; the adapter signs with it.
  std::optional<AmazonPaySigningOptions> signing;
  // Signs a request in place (e.g. by asking a key store); a non-OK Status
  // fails the request's build with it.
  std::function<Status(ProviderRequest* request)> sign;
};
// The Amazon Pay adapter described above. Throws std::invalid_argument when
// both signing and sign are set, or when `signing` is refused by
// NewAmazonPaySigner (unreadable key, empty field): a deployment that could
// never sign finds out at startup.
std::unique_ptr<ProviderAdapter> NewAmazonPayAdapter(AmazonPayOptions options = {});

// HyperPay on OPPWA, server-to-server registration payment
// (POST /v1/registrations/{id}/payments): customer_or_source is the
// registration id. No idempotency key: merchantTransactionId is the
// reference, and /v3/query?merchantTransactionId= reconciles.
struct HyperPayOptions : AdapterOptions {
  std::string entity_id;  // required
};
// The HyperPay adapter described above.
std::unique_ptr<ProviderAdapter> NewHyperPayAdapter(HyperPayOptions options = {});

// PayTabs PT2 recurring sale (POST /payment/request): customer_or_source is
// the token, source_detail the tran_ref of the payment that saved it. No
// idempotency key: cart_id is the reference, /payment/query reconciles.
struct PayTabsOptions : AdapterOptions {
  std::string profile_id;  // required, digits
};
// The PayTabs adapter described above.
std::unique_ptr<ProviderAdapter> NewPayTabsAdapter(PayTabsOptions options = {});

// Amazon Payment Services (PayFort) recurring PURCHASE
// (POST /FortAPI/paymentApi): customer_or_source is the token_name,
// source_detail the agreement_id; customer_email is required. No idempotency
// key: merchant_reference is the reference, CHECK_STATUS reconciles. Requests
// carry the SHA-256 signature made with sha_request_phrase.
struct AmazonPaymentServicesOptions : AdapterOptions {
  std::string merchant_identifier;  // required
  std::string access_code;          // required
  std::string sha_request_phrase;   // required
  // Sent as the request's `language`: the language of the gateway's
  // messages.
  std::string language = "en";
};
// The Amazon Payment Services adapter described above.
std::unique_ptr<ProviderAdapter> NewAmazonPaymentServicesAdapter(AmazonPaymentServicesOptions options = {});

// All twelve with default options, in the order above: for listing facts
// (the `phasekey providers` command), not for charging.
std::vector<std::unique_ptr<ProviderAdapter>> NewDefaultAdapters();

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_ADAPTERS_H_
