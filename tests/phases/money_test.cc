// ISO 4217 exponents and amount formats (money.h).
#include "phasekey/phases/money.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace phasekey::phases {
namespace {

TEST(MoneyTest, ExponentsFollowIso4217) {
  EXPECT_EQ(CurrencyExponent("USD"), 2);
  EXPECT_EQ(CurrencyExponent("eur"), 2);
  EXPECT_EQ(CurrencyExponent("SAR"), 2);
  for (const char* zero : {"JPY", "KRW", "ISK", "CLP", "VND", "XOF"}) EXPECT_EQ(CurrencyExponent(zero), 0) << zero;
  for (const char* three : {"KWD", "BHD", "OMR", "JOD", "TND", "IQD", "LYD"}) {
    EXPECT_EQ(CurrencyExponent(three), 3) << three;
  }
  EXPECT_EQ(CurrencyExponent("CLF"), 4);
}

TEST(MoneyTest, FormatsMajorUnitsWithTheCurrencysDigits) {
  EXPECT_EQ(*FormatMajor(1050, "USD"), "10.50");
  EXPECT_EQ(*FormatMajor(5, "usd"), "0.05");
  EXPECT_EQ(*FormatMajor(0, "USD"), "0.00");
  EXPECT_EQ(*FormatMajor(1050, "JPY"), "1050");
  EXPECT_EQ(*FormatMajor(12345, "KWD"), "12.345");
  EXPECT_EQ(*FormatMajor(7, "BHD"), "0.007");
}

TEST(MoneyTest, FormatsFewerDigitsOnlyWhenNothingIsLost) {
  EXPECT_EQ(*FormatDecimal(12340, "KWD", 2), "12.34");
  EXPECT_FALSE(FormatDecimal(12345, "KWD", 2).has_value());
  EXPECT_EQ(*FormatDecimal(150000, "HUF", 0), "1500");
  EXPECT_FALSE(FormatDecimal(150050, "HUF", 0).has_value());
}

TEST(MoneyTest, FormatsMoreDigitsByPadding) { EXPECT_EQ(*FormatDecimal(1050, "JPY", 2), "1050.00"); }

TEST(MoneyTest, RescalesBetweenMinorUnits) {
  EXPECT_EQ(*RescaleMinor(100, "ISK", 2), 10000);
  EXPECT_EQ(*RescaleMinor(10000, "MGA", 0), 100);
  EXPECT_FALSE(RescaleMinor(10050, "MGA", 0).has_value());
}

TEST(MoneyTest, RefusesNegativeAmountsBadCodesAndOverflow) {
  EXPECT_EQ(FormatMajor(-1, "USD").error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FormatMajor(1, "US").error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FormatMajor(1, "U$D").error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RescaleMinor(std::numeric_limits<std::int64_t>::max(), "JPY", 2).error().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey::phases
