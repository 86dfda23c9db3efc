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

TEST(ConnInfoTest, AMultiHostUrlKeepsItsHostsAndAsksForThePrimary) {
  const std::string url = "postgresql://u@h1:5432,h2:5433/db";
  std::string s = HardenConnInfo(url, DatabaseOptions{});
  EXPECT_EQ(s.rfind(url + "?connect_timeout=5&", 0), 0u) << s;
  EXPECT_NE(s.find("&target_session_attrs=read-write"), std::string::npos) << s;
}

TEST(ConnInfoTest, AMultiHostUrlKeepsTheSessionAttrsTheCallerChose) {
  std::string s = HardenConnInfo("postgresql://h1:1,h2:2/db?target_session_attrs=any", DatabaseOptions{});
  EXPECT_EQ(s.find("read-write"), std::string::npos) << s;
  EXPECT_EQ(s.rfind("postgresql://h1:1,h2:2/db?target_session_attrs=any&connect_timeout=5", 0), 0u) << s;
}

TEST(ConnInfoTest, AMultiHostKeyValueStringAsksForThePrimary) {
  std::string s = HardenConnInfo("host=h1,h2 port=1,2 dbname=db", DatabaseOptions{});
  EXPECT_NE(s.find(" target_session_attrs=read-write"), std::string::npos) << s;
}

TEST(ConnInfoTest, ASingleHostIsLeftToLibpqsDefaultSessionAttrs) {
  EXPECT_EQ(HardenConnInfo("postgresql://u@h:1/db?x=a,b", DatabaseOptions{}).find("target_session_attrs"),
            std::string::npos);
  EXPECT_EQ(HardenConnInfo("host=h port=1", DatabaseOptions{}).find("target_session_attrs"), std::string::npos);
}

TEST(ConnInfoTest, RedactsMultiHostUrlsAndQueryPasswords) {
  EXPECT_EQ(RedactConnInfo("postgresql://u:secret@h1:1,h2:2/db?target_session_attrs=read-write"),
            "postgresql://u:***@h1:1,h2:2/db?target_session_attrs=read-write");
  EXPECT_EQ(RedactConnInfo("postgresql://h1:1,h2:2/db?password=secret&target_session_attrs=read-write"),
            "postgresql://h1:1,h2:2/db?password=***&target_session_attrs=read-write");
  EXPECT_EQ(RedactConnInfo("postgresql://h1:1,h2:2/db"), "postgresql://h1:1,h2:2/db");
}

// libpq reads the strings (PQconninfoParse), so what counts as "spelled out"
// is what libpq would use, whatever the spacing or quoting.
TEST(ConnInfoTest, ReadsKeyValueStringsAsLibpqDoes) {
  std::string s = HardenConnInfo("host=h connect_timeout = 1", DatabaseOptions{});
  EXPECT_EQ(s.find("connect_timeout=5"), std::string::npos) << s;
  s = HardenConnInfo("host = 'h1,h2' port=1,2", DatabaseOptions{});
  EXPECT_NE(s.find(" target_session_attrs=read-write"), std::string::npos) << s;
}

TEST(ConnInfoTest, LeavesAStringWithoutAPasswordAsItIs) {
  EXPECT_EQ(RedactConnInfo("host=h application_name='password=x'"), "host=h application_name='password=x'");
  EXPECT_EQ(RedactConnInfo("postgresql://u@h/db?application_name=password"),
            "postgresql://u@h/db?application_name=password");
}

TEST(ConnInfoTest, RedactsWhatLibpqCannotParse) {
  EXPECT_EQ(RedactConnInfo("postgresql://u:secret@h/db?no_such_setting=1"),
            "postgresql://u:***@h/db?no_such_setting=1");
}

}  // namespace
}  // namespace phasekey::pg
