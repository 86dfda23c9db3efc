// The console's web helpers (console/web.h) and its loopback rule.
#include "console/web.h"

#include <gtest/gtest.h>

#include "console/console_server.h"

namespace phasekey::console {
namespace {

TEST(ConsoleWebTest, HtmlEscapesMarkupQuotesAndControlBytes) {
  EXPECT_EQ(Html(R"(<a href="x" onclick='y'>&</a>)"),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  EXPECT_EQ(Html(std::string("a\x01"
                             "b\tc\n",
                             6)),
            "a\xEF\xBF\xBD"
            "b\tc\n");
  EXPECT_EQ(Html("plain text"), "plain text");
}

TEST(ConsoleWebTest, FormsDecodePlusAndPercentAndKeepTheFirstOfARepeatedName) {
  auto f = ParseForm("a=1+2&b=%3Cx%3E&a=3&c&d=%zz&=e");
  EXPECT_EQ(f["a"], "1 2");
  EXPECT_EQ(f["b"], "<x>");
  EXPECT_EQ(f["c"], "");
  EXPECT_EQ(f["d"], "%zz");
  EXPECT_EQ(ParseQuery("/keys?state=dead&after=3.17")["after"], "3.17");
  EXPECT_TRUE(ParseQuery("/keys").empty());
  EXPECT_EQ(PathOf("/key?account=a"), "/key");
}

TEST(ConsoleWebTest, UrlEncodingRoundTripsThroughFormDecoding) {
  const std::string hostile = "<script>&key=1 +%/\"'";
  EXPECT_EQ(ParseForm("k=" + UrlEncode(hostile))["k"], hostile);
  EXPECT_EQ(UrlEncode("a-b_c.d~e"), "a-b_c.d~e");
}

TEST(ConsoleWebTest, CookiesAreFoundByExactName) {
  EXPECT_EQ(CookieValue("x=1; phasekey_console=abc; y=2", "phasekey_console"), "abc");
  EXPECT_EQ(CookieValue("not_phasekey_console=abc", "phasekey_console"), "");
  EXPECT_EQ(CookieValue("", "phasekey_console"), "");
}

TEST(ConsoleWebTest, SecretsCompareWhole) {
  EXPECT_TRUE(SecretEquals("abc", "abc"));
  EXPECT_FALSE(SecretEquals("abc", "abd"));
  EXPECT_FALSE(SecretEquals("abc", "ab"));
  EXPECT_EQ(RandomSecret().size(), 64u);
  EXPECT_NE(RandomSecret(), RandomSecret());
}

TEST(ConsoleWebTest, LoopbackIsOneTwoSevenSlashEightAndColonColonOne) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackAddress("10.0.0.5"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
  EXPECT_FALSE(IsLoopbackAddress("localhost"));
}

}  // namespace
}  // namespace phasekey::console
