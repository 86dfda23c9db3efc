// ParseHostPort and FormatHostPort (phasekey/tools/host_port.h): the one
// HOST:PORT parser of every --listen flag and "listening on" line.
#include "phasekey/tools/host_port.h"

#include <gtest/gtest.h>

namespace phasekey {
namespace {

TEST(HostPortTest, ReadsAnIpv4AddressAndPort) {
  const auto hp = ParseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8080);
}

TEST(HostPortTest, ReadsAHostName) {
  const auto hp = ParseHostPort("localhost:65535");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "localhost");
  EXPECT_EQ(hp->port, 65535);
}

TEST(HostPortTest, ReadsABracketedIpv6AddressWithoutItsBrackets) {
  const auto hp = ParseHostPort("[::1]:8080");
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, 8080);
  const auto any = ParseHostPort("[::]:1");
  ASSERT_TRUE(any);
  EXPECT_EQ(any->host, "::");
}

TEST(HostPortTest, RefusesAnIpv6AddressWithoutBrackets) {
  EXPECT_FALSE(ParseHostPort("::1:80"));
  EXPECT_FALSE(ParseHostPort("fe80::1:80"));
}

TEST(HostPortTest, PortZeroOnlyWhenAllowed) {
  EXPECT_FALSE(ParseHostPort("127.0.0.1:0"));
  const auto hp = ParseHostPort("127.0.0.1:0", PortZero::kAllowed);
  ASSERT_TRUE(hp);
  EXPECT_EQ(hp->port, 0);
  const auto v6 = ParseHostPort("[::1]:0", PortZero::kAllowed);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
}

TEST(HostPortTest, RefusesAPortOutOfRange) {
  EXPECT_FALSE(ParseHostPort("h:65536"));
  EXPECT_FALSE(ParseHostPort("h:99999999999999999999"));
  EXPECT_FALSE(ParseHostPort("h:-1"));
  EXPECT_FALSE(ParseHostPort("h:-1", PortZero::kAllowed));
}

TEST(HostPortTest, RefusesJunk) {
  for (const char* bad : {"", ":", ":80", "h", "h:", "h:8o", "h:80 ", "h: 80", "h:+80", "h:0x50", "[::1]", "[::1]80",
                          "[::1:80", "[]:80", "[::1]]:80", "a]:80", "[a]b]:80", "h:80:90"}) {
    EXPECT_FALSE(ParseHostPort(bad, PortZero::kAllowed)) << bad;
  }
}

TEST(HostPortTest, FormatsWhatItReadsBack) {
  EXPECT_EQ(FormatHostPort("127.0.0.1", 8080), "127.0.0.1:8080");
  EXPECT_EQ(FormatHostPort("::1", 80), "[::1]:80");
  for (const char* text : {"127.0.0.1:1", "example.com:443", "[::1]:9", "[2001:db8::7]:65535"}) {
    const auto hp = ParseHostPort(text);
    ASSERT_TRUE(hp) << text;
    EXPECT_EQ(FormatHostPort(hp->host, hp->port), text);
  }
}

}  // namespace
}  // namespace phasekey
