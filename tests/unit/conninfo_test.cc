#include "pg/conninfo.h"

#include <gtest/gtest.h>

namespace phasekey::pg {
namespace {

TEST(ConnInfoTest, AddsTimeoutsAndKeepalivesToAUrl) {
  DatabaseOptions o;
  std::string s = HardenConnInfo("postgresql://u@h:5432/db", o);
  EXPECT_EQ(s.rfind("postgresql://u@h:5432/db?connect_timeout=5&keepalives=1", 0), 0u) << s;
  EXPECT_NE(s.find("&tcp_user_timeout=10000"), std::string::npos) << s;
  EXPECT_NE(s.find("&keepalives_count=3"), std::string::npos) << s;
}

TEST(ConnInfoTest, AppendsToAnExistingQueryString) {
  std::string s = HardenConnInfo("postgresql://u@h/db?sslmode=disable", DatabaseOptions{});
  EXPECT_EQ(s.rfind("postgresql://u@h/db?sslmode=disable&connect_timeout=5", 0), 0u) << s;
}

TEST(ConnInfoTest, KeepsSettingsTheCallerSpelledOut) {
  std::string s = HardenConnInfo("host=/tmp port=5 connect_timeout=1", DatabaseOptions{});
  EXPECT_EQ(s.find("connect_timeout=5"), std::string::npos) << s;
  EXPECT_NE(s.find(" keepalives=1"), std::string::npos) << s;
}

TEST(ConnInfoTest, RedactsPasswords) {
  EXPECT_EQ(RedactConnInfo("postgresql://u:secret@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(RedactConnInfo("host=h password=secret user=u"), "host=h password=*** user=u");
}

}  // namespace
}  // namespace phasekey::pg
