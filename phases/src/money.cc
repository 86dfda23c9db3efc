#include "phasekey/phases/money.h"

#include <array>
#include <cstdlib>
#include <limits>
#include <string>

namespace phasekey::phases {
namespace {

constexpr std::array<std::string_view, 17> kZeroDecimal = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY",
                                                           "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
                                                           "VND", "VUV", "XAF", "XOF", "XPF"};
constexpr std::array<std::string_view, 7> kThreeDecimal = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"};
constexpr std::array<std::string_view, 2> kFourDecimal = {"CLF", "UYW"};

template <std::size_t N>
bool Contains(const std::array<std::string_view, N>& list, std::string_view code) {
  for (auto c : list) {
    if (c == code) return true;
  }
  return false;
}

std::int64_t Pow10(int n) {
  std::int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

}  // namespace

bool IsCurrencyCode(std::string_view currency) {
  if (currency.size() != 3) return false;
  for (char c : currency) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))) return false;
  }
  return true;
}

std::string UpperCurrency(std::string_view currency) {
  std::string out(currency);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string LowerCurrency(std::string_view currency) {
  std::string out(currency);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

int CurrencyExponent(std::string_view currency) {
  const std::string code = UpperCurrency(currency);
  if (Contains(kZeroDecimal, code)) return 0;
  if (Contains(kThreeDecimal, code)) return 3;
  if (Contains(kFourDecimal, code)) return 4;
  return 2;
}

Result<std::int64_t> RescaleMinor(std::int64_t amount_minor, std::string_view currency, int decimals) {
  if (!IsCurrencyCode(currency))
    return Status::InvalidArgument("not an ISO 4217 currency code: '" + std::string(currency) + "'");
  if (amount_minor < 0) return Status::InvalidArgument("negative amount");
  const int exponent = CurrencyExponent(currency);
  if (decimals >= exponent) {
    const std::int64_t factor = Pow10(decimals - exponent);
    if (amount_minor > std::numeric_limits<std::int64_t>::max() / factor)
      return Status::InvalidArgument("amount too large");
    return amount_minor * factor;
  }
  const std::int64_t divisor = Pow10(exponent - decimals);
  if (amount_minor % divisor != 0) {
    return Status::InvalidArgument(std::to_string(amount_minor) + " minor units of " + UpperCurrency(currency) +
                                   " cannot be expressed with " + std::to_string(decimals) + " decimals");
  }
  return amount_minor / divisor;
}

Result<std::string> FormatDecimal(std::int64_t amount_minor, std::string_view currency, int decimals) {
  Result<std::int64_t> scaled = RescaleMinor(amount_minor, currency, decimals);
  if (!scaled) return scaled.error();
  std::string digits = std::to_string(*scaled);
  if (decimals == 0) return digits;
  if (digits.size() <= static_cast<std::size_t>(decimals)) {
    digits.insert(0, static_cast<std::size_t>(decimals) + 1 - digits.size(), '0');
  }
  digits.insert(digits.size() - static_cast<std::size_t>(decimals), ".");
  return digits;
}

Result<std::string> FormatMajor(std::int64_t amount_minor, std::string_view currency) {
  return FormatDecimal(amount_minor, currency, CurrencyExponent(currency));
}

}  // namespace phasekey::phases
