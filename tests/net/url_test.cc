// net::ParseUrl (net/src/net/url.h), the one URL parser behind ParseBaseUrl
// and both ParseHttpUrls: what it splits and what it refuses, with the
// reason its users word their errors around.
#include "net/url.h"

#include <gtest/gtest.h>

#include <string>

namespace phasekey::net {
namespace {

std::string Refusal(const char* text) {
  const ParsedUrl parsed = ParseUrl(text);
  return parsed.url ? "<accepted>" : parsed.error;
}

TEST(UrlTest, AUrlIsSplitIntoSchemeHostPortPathAndQuery) {
  ParsedUrl p = ParseUrl("HTTPS://Api.Example.com:8443/v1/charges?limit=3");
  ASSERT_TRUE(p.url) << p.error;
  EXPECT_TRUE(p.url->tls);
  EXPECT_EQ(p.url->host, "Api.Example.com");
  EXPECT_EQ(p.url->port, 8443);
  EXPECT_EQ(p.url->authority, "Api.Example.com:8443");
  EXPECT_EQ(p.url->path, "/v1/charges");
  EXPECT_TRUE(p.url->has_query);
  EXPECT_EQ(p.url->Target(), "/v1/charges?limit=3");
}

TEST(UrlTest, TheSchemeGivesThePortWhenNoneOrAnEmptyOneIsWritten) {
  EXPECT_EQ(ParseUrl("http://h").url->port, 80);
  EXPECT_EQ(ParseUrl("https://h").url->port, 443);
  EXPECT_EQ(ParseUrl("http://h:/x").url->port, 80);
  EXPECT_EQ(ParseUrl("http://h").url->Target(), "/");
}

TEST(UrlTest, AnIpv6HostLosesItsBracketsButTheAuthorityKeepsThem) {
  const ParsedUrl p = ParseUrl("http://[::1]:9000/a");
  ASSERT_TRUE(p.url) << p.error;
  EXPECT_EQ(p.url->host, "::1");
  EXPECT_EQ(p.url->authority, "[::1]:9000");
}

TEST(UrlTest, EachRefusalSaysWhy) {
  EXPECT_EQ(Refusal("ftp://x/"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("example.com:80"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("http:host/path"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("http://h/#f"), "a URL with a fragment");
  EXPECT_EQ(Refusal("http://u:p@h/"), "a URL with userinfo");
  EXPECT_EQ(Refusal("http://[v1.x]/"), "an IPvFuture host");
  EXPECT_EQ(Refusal("https://"), "a URL without a host");
  EXPECT_EQ(Refusal("http://h:0/"), "a bad port");
  EXPECT_EQ(Refusal("http://h:65536/"), "a bad port");
  EXPECT_NE(Refusal("http://h:12ab"), "<accepted>");
  EXPECT_EQ(Refusal("http://h/a b").rfind("a malformed URL (", 0), 0u);
}

}  // namespace
}  // namespace phasekey::net
