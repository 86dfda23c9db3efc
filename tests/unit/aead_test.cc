// seal/aead.h: AES-256-GCM as phasekey seals with it.
#include "seal/aead.h"

#include <gtest/gtest.h>

namespace phasekey::seal {
namespace {

TEST(AeadTest, WhatIsSealedOpensWithTheSameKeyAndAssociatedData) {
  const Key key = RandomKey();
  const std::string sealed = Seal(key, "row-1", R"({"card":"4242"})");
  EXPECT_EQ(sealed.size(), 15 + kSealOverhead);
  EXPECT_EQ(sealed.find("4242"), std::string::npos);
  EXPECT_EQ(Open(key, "row-1", sealed), std::optional<std::string>(R"({"card":"4242"})"));
}

TEST(AeadTest, TheSameValueSealsDifferentlyEachTime) {
  const Key key = RandomKey();
  EXPECT_NE(Seal(key, "a", "same"), Seal(key, "a", "same")) << "a random nonce each time";
}

TEST(AeadTest, AnotherKeyOtherAssociatedDataOrAChangedByteDoesNotOpen) {
  const Key key = RandomKey();
  std::string sealed = Seal(key, "row-1", "payload");
  EXPECT_EQ(Open(RandomKey(), "row-1", sealed), std::nullopt);
  EXPECT_EQ(Open(key, "row-2", sealed), std::nullopt);
  for (std::size_t i = 0; i < sealed.size(); ++i) {
    std::string changed = sealed;
    changed[i] = static_cast<char>(changed[i] ^ 1);
    EXPECT_EQ(Open(key, "row-1", changed), std::nullopt) << "byte " << i;
  }
  EXPECT_EQ(Open(key, "row-1", sealed.substr(0, sealed.size() - 1)), std::nullopt);
  EXPECT_EQ(Open(key, "row-1", ""), std::nullopt);
}

TEST(AeadTest, AnEmptyValueSealsAndOpens) {
  const Key key = RandomKey();
  EXPECT_EQ(Open(key, "", Seal(key, "", "")), std::optional<std::string>(""));
}

}  // namespace
}  // namespace phasekey::seal
