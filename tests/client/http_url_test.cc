// ParseHttpUrl (client/src/http_exchange.h) on Boost.URL: what each refusal
// says, and the parts of URLs the hand-written parser it replaced split the
// same way (client_test.cc's HttpUrlTest has the common cases).
#include <gtest/gtest.h>

#include <string>

#include "http_exchange.h"

namespace phasekey::client {
namespace {

std::string Refusal(const char* url) {
  std::string why;
  if (internal::ParseHttpUrl(url, &why)) return "<accepted>";
  return why;
}

TEST(HttpUrlBoostTest, EachRefusalSaysWhy) {
  EXPECT_EQ(Refusal("ftp://x/"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("example.com:80"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("127.0.0.1:80"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("http:host/path"), "only http:// and https:// URLs are supported");
  EXPECT_EQ(Refusal("http://h/#f"), "a URL with a fragment");
  EXPECT_EQ(Refusal("http://u:p@h/"), "a URL with userinfo");
  EXPECT_EQ(Refusal("https://"), "a URL without a host");
  EXPECT_EQ(Refusal("http://:80/"), "a URL without a host");
  EXPECT_EQ(Refusal("http://h:0/"), "a bad port");
  EXPECT_EQ(Refusal("http://h:65536/"), "a bad port");
  EXPECT_EQ(Refusal("http://[v1.x]/"), "an IPvFuture host");
  EXPECT_EQ(Refusal("http://h/a b").rfind("a malformed URL", 0), 0u) << Refusal("http://h/a b");
  EXPECT_EQ(Refusal("http://[::1/").rfind("a malformed URL", 0), 0u) << Refusal("http://[::1/");
}

TEST(HttpUrlBoostTest, TargetHostHeaderAndPortAsWritten) {
  std::string why;
  auto u = internal::ParseHttpUrl("http://h?x=1", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_EQ(u->target, "/?x=1");
  EXPECT_EQ(u->host_header, "h");
  u = internal::ParseHttpUrl("http://h:/p%20q?a=%2F", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_EQ(u->port, "80");  // an empty port is the default one
  EXPECT_EQ(u->target, "/p%20q?a=%2F");
  EXPECT_EQ(u->host_header, "h:");
  u = internal::ParseHttpUrl("HtTpS://Api.Example.com:8443", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "Api.Example.com");
  EXPECT_EQ(u->port, "8443");
  EXPECT_EQ(u->host_header, "Api.Example.com:8443");
  u = internal::ParseHttpUrl("https://[2001:db8::7]/v1", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_EQ(u->host, "2001:db8::7");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->host_header, "[2001:db8::7]");
}

}  // namespace
}  // namespace phasekey::client
