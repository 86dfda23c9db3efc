// ParseTraceParent (engine/src/util/trace_parent.cc): the W3C Trace Context
// Level 1 traceparent header, with the cases of the specification and of its
// test suite (w3c/trace-context, test/test.py): what is read, and every
// value a receiver must ignore (restart the trace).
#include "util/trace_parent.h"

#include <string>

#include <gtest/gtest.h>

namespace phasekey::util {
namespace {

constexpr char kTrace[] = "0af7651916cd43dd8448eb211c80319c";
constexpr char kParent[] = "b7ad6b7169203331";

std::string Header(const std::string& version, const std::string& trace = kTrace, const std::string& parent = kParent,
                   const std::string& flags = "01") {
  return version + "-" + trace + "-" + parent + "-" + flags;
}

void ExpectIgnored(const std::string& value) {
  EXPECT_EQ(ParseTraceParent(value), std::nullopt) << "accepted: '" << value << "'";
}

TEST(TraceParentTest, ReadsTheSpecificationsExample) {
  auto tp = ParseTraceParent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  ASSERT_TRUE(tp.has_value());
  EXPECT_EQ(tp->trace_id, kTrace);
  EXPECT_EQ(tp->parent_id, kParent);
  EXPECT_EQ(tp->flags, "01");
  EXPECT_EQ(tp->Header(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
}

TEST(TraceParentTest, KeepsFlagsItDoesNotKnow) {
  EXPECT_EQ(ParseTraceParent(Header("00", kTrace, kParent, "00"))->flags, "00");
  EXPECT_EQ(ParseTraceParent(Header("00", kTrace, kParent, "ff"))->flags, "ff");
}

TEST(TraceParentTest, AllowsOptionalWhitespaceAroundTheValue) {
  auto tp = ParseTraceParent(" \t" + Header("00") + "\t ");
  ASSERT_TRUE(tp.has_value());
  EXPECT_EQ(tp->Header(), Header("00"));
}

TEST(TraceParentTest, IgnoresVersionFf) { ExpectIgnored(Header("ff")); }

TEST(TraceParentTest, IgnoresAVersionThatIsNotTwoLowercaseHexDigits) {
  ExpectIgnored(Header("0"));
  ExpectIgnored(Header("000"));
  ExpectIgnored(Header("0G"));
  ExpectIgnored(Header("AA"));
  ExpectIgnored(Header(".0"));
}

TEST(TraceParentTest, IgnoresAnAllZeroTraceId) { ExpectIgnored(Header("00", std::string(32, '0'))); }

TEST(TraceParentTest, IgnoresAnAllZeroParentId) { ExpectIgnored(Header("00", kTrace, std::string(16, '0'))); }

TEST(TraceParentTest, IgnoresUppercaseHex) {
  ExpectIgnored(Header("00", "0AF7651916CD43DD8448EB211C80319C"));
  ExpectIgnored(Header("00", kTrace, "B7AD6B7169203331"));
  ExpectIgnored(Header("00", kTrace, kParent, "0A"));
}

TEST(TraceParentTest, IgnoresFieldsOfTheWrongLengthOrCharacters) {
  ExpectIgnored(Header("00", std::string(kTrace) + "0"));
  ExpectIgnored(Header("00", std::string(kTrace).substr(1)));
  ExpectIgnored(Header("00", kTrace, std::string(kParent) + "0"));
  ExpectIgnored(Header("00", kTrace, std::string(kParent).substr(1)));
  ExpectIgnored(Header("00", kTrace, kParent, "1"));
  ExpectIgnored(Header("00", kTrace, kParent, "001"));
  ExpectIgnored(Header("00", "0af7651916cd43dd8448eb211c80319.", kParent));
  ExpectIgnored(Header("00", kTrace, "b7ad6b716920333.", kParent));
  ExpectIgnored(Header("00", kTrace, kParent, ".0"));
  ExpectIgnored("00_0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331_01");
}

TEST(TraceParentTest, IgnoresVersion00WithAnythingAfterTheFlags) {
  ExpectIgnored(Header("00") + "-");
  ExpectIgnored(Header("00") + "-what-the-future-will-be-like");
  ExpectIgnored(Header("00") + ".what-the-future-will-be-like");
}

TEST(TraceParentTest, ReadsALaterVersionsFirstFourFields) {
  auto alone = ParseTraceParent(Header("cc"));
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->Header(), Header("00"));
  auto more = ParseTraceParent(Header("cc") + "-what-the-future-will-be-like");
  ASSERT_TRUE(more.has_value());
  EXPECT_EQ(more->trace_id, kTrace);
  EXPECT_EQ(more->parent_id, kParent);
}

TEST(TraceParentTest, IgnoresALaterVersionWhoseFlagsAreNotFollowedByADash) {
  ExpectIgnored(Header("cc") + ".what-the-future-will-be-like");
  ExpectIgnored(Header("cc", kTrace, kParent, "012"));
}

TEST(TraceParentTest, IgnoresALaterVersionWithInvalidFields) {
  ExpectIgnored(Header("cc", std::string(32, '0')));
  ExpectIgnored(Header("cc", kTrace, kParent, "0G"));
}

TEST(TraceParentTest, IgnoresEmptyAndShortValues) {
  ExpectIgnored("");
  ExpectIgnored("   ");
  ExpectIgnored(Header("00").substr(0, 54));
}

TEST(TraceParentTest, IgnoresTwoHeadersJoinedByAComma) { ExpectIgnored(Header("00") + "," + Header("00")); }

}  // namespace
}  // namespace phasekey::util
