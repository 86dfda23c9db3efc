// Amounts: ISO 4217 minor-unit exponents and the formats gateways want.
//
// Every PaymentIntent amount is an integer in the currency's ISO 4217 minor
// unit. Gateways then want it as that integer (Adyen, Square, Moyasar,
// Checkout.com, Amazon Payment Services), as a decimal string with the right
// number of digits ("10.00" PayPal, Amazon Pay, HyperPay), as a JSON number in
// major units (Tap, PayTabs), or in their own minor unit where it departs from
// ISO (Stripe's zero-decimal MGA, two-decimal ISK). A conversion that would
// drop a non-zero digit is refused, never rounded.
#ifndef PHASEKEY_PHASES_MONEY_H_
#define PHASEKEY_PHASES_MONEY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "phasekey/status.h"

namespace phasekey::phases {

// True for three ASCII letters (either case).
bool IsCurrencyCode(std::string_view currency);
// "KWD" for "kwd".
std::string UpperCurrency(std::string_view currency);
// "kwd" for "KWD".
std::string LowerCurrency(std::string_view currency);

// The ISO 4217 minor-unit exponent: 0 for BIF CLP DJF GNF ISK JPY KMF KRW PYG
// RWF UGX UYI VND VUV XAF XOF XPF; 3 for BHD IQD JOD KWD LYD OMR TND; 4 for
// CLF UYW; 2 for every other code. Case-insensitive.
int CurrencyExponent(std::string_view currency);

// `amount_minor` (ISO minor units of `currency`) re-expressed in a unit with
// `decimals` digits: multiplied by 10^(decimals - exponent), or divided by
// 10^(exponent - decimals) when that is exact. InvalidArgument for a negative
// amount, an invalid currency, an inexact division, or an overflow.
Result<std::int64_t> RescaleMinor(std::int64_t amount_minor, std::string_view currency, int decimals);

// `amount_minor` as a decimal string in major units with exactly `decimals`
// digits after the point (none and no point when 0): 1050 USD, 2 -> "10.50";
// 1050 JPY, 0 -> "1050"; 12340 KWD, 2 -> "12.34"; 12345 KWD, 2 ->
// InvalidArgument. Same failures as RescaleMinor.
Result<std::string> FormatDecimal(std::int64_t amount_minor, std::string_view currency, int decimals);

// FormatDecimal with the currency's own exponent.
Result<std::string> FormatMajor(std::int64_t amount_minor, std::string_view currency);

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_MONEY_H_
