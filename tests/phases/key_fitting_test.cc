// FitToRules, NameBasedUuid and the hashes behind them (key_fitting.h).
// Expected values were computed independently with Python's uuid.uuid5,
// hashlib and base64.
#include "phasekey/phases/key_fitting.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "adapter_test_util.h"
#include "key_hashing.h"

namespace phasekey::phases {
namespace {

using testing::kOtherProviderKey;
using testing::kProviderKey;

const KeyRules kStripe{1, 255, KeyAlphabet::kPrintableAscii};
const KeyRules kSquare{1, 45, KeyAlphabet::kPrintableAscii};
const KeyRules kAmazonPay{1, 32, KeyAlphabet::kUrlSafe};
const KeyRules kAps{1, 40, KeyAlphabet::kReferenceSafe};
const KeyRules kUuid{36, 36, KeyAlphabet::kUuid};

TEST(KeyFittingTest, Sha256HexMatchesTheKnownVectorForAbc) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(KeyFittingTest, Sha256Base32MatchesAnIndependentEncoding) {
  EXPECT_EQ(Sha256Base32(kProviderKey, 26), "3j5fgvznjnhryxxxf6pwt3he7y");
}

TEST(KeyFittingTest, NameBasedUuidIsVersion5InThePhasekeyNamespace) {
  EXPECT_EQ(NameBasedUuid(kProviderKey), "77a9d6cc-0ddb-5e50-9864-db09f1c82058");
  EXPECT_EQ(NameBasedUuid(""), "06c962c3-8b4d-5449-bb55-9a401ae39dce");
}

TEST(KeyFittingTest, AKeyThatAlreadyFitsIsSentUnchanged) {
  EXPECT_EQ(FitToRules(kProviderKey, kStripe), kProviderKey);
  EXPECT_TRUE(KeyFits(kProviderKey, kStripe));
}

TEST(KeyFittingTest, ATooLongKeyKeepsAReadablePrefixAndEndsInItsHash) {
  const std::string key = std::string(kProviderKey) + "_for_ride";  // 52 characters
  const std::string fitted = FitToRules(key, kSquare);
  EXPECT_EQ(fitted.size(), 45u);
  EXPECT_EQ(fitted, "0b6f4c8e-3d2a-4f7b-az74cg2c2udhnrzvfywpacz5y2");
  EXPECT_TRUE(KeyFits(fitted, kSquare));
}

TEST(KeyFittingTest, CharactersOutsideTheAlphabetBecomeDashesBeforeTheHash) {
  const std::string fitted = FitToRules("ab:c", kAmazonPay);
  EXPECT_TRUE(fitted.starts_with("ab-c-")) << fitted;
  EXPECT_TRUE(KeyFits(fitted, kAmazonPay)) << fitted;
  EXPECT_LE(fitted.size(), 32u);
}

TEST(KeyFittingTest, FittingIsDeterministic) {
  for (const KeyRules& rules : {kStripe, kSquare, kAmazonPay, kAps, kUuid}) {
    EXPECT_EQ(FitToRules(kProviderKey, rules), FitToRules(kProviderKey, rules));
  }
}

TEST(KeyFittingTest, DistinctKeysStayDistinctUnderEveryRule) {
  for (const KeyRules& rules : {kStripe, kSquare, kAmazonPay, kAps, kUuid}) {
    std::set<std::string> seen;
    for (int row = 0; row < 2000; ++row) {
      const std::string key = "00000000-0000-4000-8000-" + std::to_string(100000000000 + row) + ":charge";
      EXPECT_TRUE(seen.insert(FitToRules(key, rules)).second) << DescribeKeyRules(rules) << " collided at " << row;
    }
  }
}

TEST(KeyFittingTest, KeysThatDifferOnlyAfterTheKeptPrefixStillDiffer) {
  // Same first 18 characters; Square keeps 18 of them.
  const std::string row = std::string(kProviderKey).substr(0, 36);
  EXPECT_NE(FitToRules(row + ":charge_for_ride", kSquare), FitToRules(row + ":refund_for_ride", kSquare));
  EXPECT_NE(FitToRules(std::string(kProviderKey) + "_x", kAmazonPay),
            FitToRules(std::string(kOtherProviderKey) + "_x", kAmazonPay));
}

TEST(KeyFittingTest, EveryFittedKeyRespectsItsRules) {
  const std::string long_key(300, 'x');
  for (const KeyRules& rules : {kStripe, kSquare, kAmazonPay, kAps, kUuid}) {
    for (const std::string& key : {std::string(kProviderKey), long_key, std::string("é ü\t"), std::string()}) {
      EXPECT_TRUE(KeyFits(FitToRules(key, rules), rules)) << DescribeKeyRules(rules) << " / " << key;
    }
  }
}

TEST(KeyFittingTest, AKeyShorterThanTheMinimumIsFittedUp) {
  const KeyRules hyperpay{8, 255, KeyAlphabet::kPrintableAscii};
  const std::string fitted = FitToRules("abc", hyperpay);
  EXPECT_GE(fitted.size(), 8u);
  EXPECT_TRUE(KeyFits(fitted, hyperpay));
}

TEST(KeyFittingTest, RulesDescribeThemselvesForTheCli) {
  EXPECT_EQ(DescribeKeyRules(kSquare), "1..45 printable ASCII");
  EXPECT_EQ(DescribeKeyRules(kAmazonPay), "1..32 of [A-Za-z0-9_-]");
  EXPECT_EQ(DescribeKeyRules(kUuid), "UUID");
}

}  // namespace
}  // namespace phasekey::phases
