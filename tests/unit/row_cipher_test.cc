// seal/row_cipher.h: a key row's bodies sealed under its data key.
#include "seal/row_cipher.h"

#include <gtest/gtest.h>

namespace phasekey::seal {
namespace {

const std::string kAccount = "acct", kKey = "k-1", kOtherKey = "k-2";

TEST(RowCipherTest, BodiesAndOutcomeValuesSealAndOpenWithThePointsLeftClear) {
  const Key key = RandomKey();
  const RowCipher cipher(&key, 3, kAccount, kKey);
  const std::string sealed = cipher.SealRequest(R"({"iban":"DE89"})");
  EXPECT_EQ(sealed.find("DE89"), std::string::npos);
  EXPECT_EQ(cipher.OpenRequest(sealed), R"({"iban":"DE89"})");
  EXPECT_EQ(cipher.OpenResponse(cipher.SealResponse("binary\0body")), "binary\0body");
  const nlohmann::json outcomes = {{"charged", {{"charge_id", "ch_9"}}}};
  const nlohmann::json stored = cipher.SealOutcomes(outcomes);
  EXPECT_TRUE(stored.contains("charged"));
  EXPECT_EQ(stored.dump().find("ch_9"), std::string::npos);
  EXPECT_EQ(cipher.OpenOutcomes(stored), outcomes);
}

TEST(RowCipherTest, AValueMovedToAnotherRowOrPartDoesNotOpen) {
  const Key key = RandomKey();
  const RowCipher mine(&key, 3, kAccount, kKey), other(&key, 3, kAccount, kOtherKey);
  const std::string request = mine.SealRequest("{}");
  EXPECT_THROW(other.OpenRequest(request), std::runtime_error);
  EXPECT_THROW(mine.OpenResponse(request), std::runtime_error);
  nlohmann::json stored = mine.SealOutcomes({{"a", 1}});
  stored["b"] = stored["a"];
  EXPECT_THROW(mine.OpenOutcomes(stored), std::runtime_error);
}

TEST(RowCipherTest, WithoutAKeyEverythingIsStoredAsItIs) {
  const RowCipher plain(nullptr, 0, kAccount, kKey);
  EXPECT_EQ(plain.SealRequest("{\"a\":1}"), "{\"a\":1}");
  EXPECT_EQ(plain.SealOutcomes({{"p", 1}}), nlohmann::json({{"p", 1}}));
}

TEST(RowCipherTest, Base64RoundTripsEveryLengthAndRefusesWhatIsNot) {
  for (std::size_t n = 0; n < 8; ++n) {
    const std::string bytes = RandomBytes(n);
    EXPECT_EQ(Base64Decode(Base64Encode(bytes)), std::optional<std::string>(bytes)) << n;
  }
  EXPECT_EQ(Base64Decode("abc"), std::nullopt);
  EXPECT_EQ(Base64Decode("ab!="), std::nullopt);
}

}  // namespace
}  // namespace phasekey::seal
