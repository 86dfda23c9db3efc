// seal/keyring.h: the key-encryption keys an operator supplies.
#include "seal/keyring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>

namespace phasekey::seal {
namespace {

const std::string kHexA(64, 'a');
const std::string kHexB(64, 'B');

TEST(KeyringTest, TheFirstKeyIsCurrentAndEveryKeyIsKept) {
  auto ring = ParseKeyring("# rotated 2026-12\n\nk2 " + kHexB + "\n  k1\t" + kHexA + "  \n", "test");
  ASSERT_TRUE(ring.has_value()) << ring.error().ToString();
  EXPECT_EQ(ring->current, "k2");
  ASSERT_NE(ring->Find("k1"), nullptr);
  EXPECT_EQ((*ring->Find("k1"))[0], 0xaa);
  EXPECT_EQ((*ring->Find("k2"))[31], 0xbb);
  EXPECT_EQ(ring->Find("k3"), nullptr);
}

TEST(KeyringTest, MalformedLinesDuplicateIdsAndEmptyTextAreRefusedWithoutQuotingAKey) {
  for (const std::string& text :
       {"k1 " + kHexA.substr(2), "k1 " + std::string(64, 'g'), std::string("k1"), "k/1 " + kHexA,
        std::string(65, 'x') + " " + kHexA, "k1 " + kHexA + "\nk1 " + kHexB, std::string("# nothing\n")}) {
    SCOPED_TRACE(text);
    auto ring = ParseKeyring(text, "kek_file f");
    ASSERT_FALSE(ring.has_value());
    EXPECT_EQ(ring.error().message().find(kHexA.substr(2, 20)), std::string::npos);
    EXPECT_EQ(ring.error().message().find('\n'), std::string::npos);
  }
}

TEST(KeyringTest, AFileOthersCanReadIsRefusedAndAPrivateOneIsRead) {
  char path[] = "/tmp/phasekey-keyring-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "k1 " << kHexA << "\n";
  EncryptionOptions options;
  options.kek_file = path;
  ::chmod(path, 0640);
  auto loose = LoadKeyring(options);
  ASSERT_FALSE(loose.has_value());
  EXPECT_NE(loose.error().message().find("0640"), std::string::npos) << loose.error().message();
  ::chmod(path, 0600);
  auto ring = LoadKeyring(options);
  ASSERT_TRUE(ring.has_value()) << ring.error().ToString();
  EXPECT_EQ(ring->current, "k1");
  std::remove(path);
}

TEST(KeyringTest, ACommandPrintsTheKeysAndAFailingCommandIsAnError) {
  EncryptionOptions options;
  options.kek_command = "printf 'vault-7 " + kHexA + "\\n'";
  auto ring = LoadKeyring(options);
  ASSERT_TRUE(ring.has_value()) << ring.error().ToString();
  EXPECT_EQ(ring->current, "vault-7");
  options.kek_command = "echo 'k1 " + kHexA + "'; exit 3";
  auto failed = LoadKeyring(options);
  ASSERT_FALSE(failed.has_value());
  EXPECT_NE(failed.error().message().find("exit status 3"), std::string::npos) << failed.error().message();
}

TEST(KeyringTest, ExactlyOneSourceMustBeSet) {
  EXPECT_FALSE(LoadKeyring(EncryptionOptions{}).has_value());
  EncryptionOptions both;
  both.kek_file = "/x";
  both.kek_command = "true";
  EXPECT_FALSE(LoadKeyring(both).has_value());
}

}  // namespace
}  // namespace phasekey::seal
