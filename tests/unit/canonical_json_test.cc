// RFC 8785 canonicalization and request fingerprints. The external vectors
// are read at test time from ../shared/testdata/jcs (see its README.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fingerprint/jcs_primitives.h"
#include "phasekey/fingerprint.h"
#include "support/testdata.h"

namespace phasekey {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kTestData = phasekey::testing::JcsTestDataDir();

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The canonical form of `body`, or "<error: message>".
std::string Canon(std::string_view body) {
  Result<std::string> r = CanonicalizeJson(body);
  return r ? *r : "<error: " + r.error().message() + ">";
}

// The error message for `body`, which must be refused with InvalidArgument.
std::string Refusal(std::string_view body) {
  Result<std::string> r = CanonicalizeJson(body);
  if (r) return "<accepted as " + *r + ">";
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.error().message(), Not(HasSubstr("\n")));
  return r.error().message();
}

double FromBits(std::uint64_t bits) { return std::bit_cast<double>(bits); }

std::string FormatBits(std::uint64_t bits) {
  Result<std::string> r = jcs::FormatNumber(FromBits(bits));
  return r ? *r : "<error: " + r.error().message() + ">";
}

// --- The six RFC 8785 input/output pairs --------------------------------

class Rfc8785VectorTest : public ::testing::TestWithParam<const char*> {};

TEST_P(Rfc8785VectorTest, CanonicalizesInputToExactlyTheExpectedBytes) {
  std::string name = GetParam();
  std::string input = ReadFile(kTestData + "/input/" + name + ".json");
  std::string expected = ReadFile(kTestData + "/output/" + name + ".json");
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(Canon(input), expected);
  EXPECT_EQ(Canon(expected), expected) << "canonical form is a fixed point";
}

INSTANTIATE_TEST_SUITE_P(CyberphoneTestData, Rfc8785VectorTest,
                         ::testing::Values("arrays", "french", "structures", "unicode", "values", "weird"));

// --- Numbers ------------------------------------------------------------

TEST(CanonicalJsonTest, FormatsTheFirst100kEs6NumberSuiteLinesExactly) {
  std::string command = "gzip -dc '" + kTestData + "/es6-numbers-100k.txt.gz'";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[128];
  int lines = 0, failures = 0;
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::string_view text(line);
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
    std::size_t comma = text.find(',');
    ASSERT_NE(comma, std::string_view::npos) << text;
    std::uint64_t bits = 0;  // 1-16 hex digits; leading zeros are implied
    std::from_chars(text.data(), text.data() + comma, bits, 16);
    std::string_view expected = text.substr(comma + 1);
    ++lines;
    std::string formatted = FormatBits(bits);
    std::string reparsed = Canon(expected);
    if (formatted != expected || reparsed != expected) {
      if (++failures <= 10) {
        ADD_FAILURE() << text << ": formatted " << formatted << ", reparsed " << reparsed;
      }
    }
  }
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(lines, 100000);
  EXPECT_EQ(failures, 0);
}

TEST(CanonicalJsonTest, FormatsTheRfc8785AppendixBSamples) {
  EXPECT_EQ(FormatBits(0x0000000000000000), "0");
  EXPECT_EQ(FormatBits(0x8000000000000000), "0");
  EXPECT_EQ(FormatBits(0x0000000000000001), "5e-324");
  EXPECT_EQ(FormatBits(0x8000000000000001), "-5e-324");
  EXPECT_EQ(FormatBits(0x7fefffffffffffff), "1.7976931348623157e+308");
  EXPECT_EQ(FormatBits(0xffefffffffffffff), "-1.7976931348623157e+308");
  EXPECT_EQ(FormatBits(0x4340000000000000), "9007199254740992");
  EXPECT_EQ(FormatBits(0xc340000000000000), "-9007199254740992");
  EXPECT_EQ(FormatBits(0x4430000000000000), "295147905179352830000");
  EXPECT_EQ(FormatBits(0x44b52d02c7e14af5), "9.999999999999997e+22");
  EXPECT_EQ(FormatBits(0x44b52d02c7e14af6), "1e+23");
  EXPECT_EQ(FormatBits(0x44b52d02c7e14af7), "1.0000000000000001e+23");
  EXPECT_EQ(FormatBits(0x444b1ae4d6e2ef4f), "999999999999999900000");
  EXPECT_EQ(FormatBits(0x444b1ae4d6e2ef50), "1e+21");
  EXPECT_EQ(FormatBits(0x3eb0c6f7a0b5ed8c), "9.999999999999997e-7");
  EXPECT_EQ(FormatBits(0x3eb0c6f7a0b5ed8d), "0.000001");
  EXPECT_EQ(FormatBits(0x41b3de4355555553), "333333333.3333332");
  EXPECT_EQ(FormatBits(0x41b3de4355555554), "333333333.33333325");
  EXPECT_EQ(FormatBits(0x41b3de4355555555), "333333333.3333333");
  EXPECT_EQ(FormatBits(0x41b3de4355555556), "333333333.3333334");
  EXPECT_EQ(FormatBits(0x41b3de4355555557), "333333333.33333343");
  EXPECT_EQ(FormatBits(0xbecbf647612f3696), "-0.0000033333333333333333");
  EXPECT_EQ(FormatBits(0x43143ff3c1cb0959), "1424953923781206.2");
}

TEST(CanonicalJsonTest, RefusesToFormatNanAndInfinity) {
  EXPECT_FALSE(jcs::FormatNumber(FromBits(0x7fffffffffffffff)).has_value());
  EXPECT_FALSE(jcs::FormatNumber(FromBits(0x7ff0000000000000)).has_value());
  EXPECT_FALSE(jcs::FormatNumber(FromBits(0xfff0000000000000)).has_value());
}

TEST(CanonicalJsonTest, SpellsEveryNumberAsItsDoubleValue) {
  EXPECT_EQ(Canon("[1, 1.0, 1e0, 10e-1, 0.1e1, 1E+0]"), "[1,1,1,1,1,1]");
  EXPECT_EQ(Canon("[-0, -0.0, 0e5]"), "[0,0,0]");
  EXPECT_EQ(Canon("[1e21, 1e-7, 123e-2, 1e20, 0.000001]"), "[1e+21,1e-7,1.23,100000000000000000000,0.000001]");
  EXPECT_EQ(Canon("-9223372036854775808"), "-9223372036854776000");
}

TEST(CanonicalJsonTest, RoundsIntegersBeyondTwoToThe53LikeIJsonRequires) {
  EXPECT_EQ(Canon("9007199254740993"), "9007199254740992");
  EXPECT_EQ(Canon("9007199254740995"), "9007199254740996");
  EXPECT_EQ(Canon("18446744073709551615"), "18446744073709552000");
  EXPECT_EQ(Canon("18446744073709551616"), "18446744073709552000");
  EXPECT_EQ(Canon("123456789012345678901234567890"), "1.2345678901234568e+29");
}

TEST(CanonicalJsonTest, RoundsDecimalTextCorrectlyToTheNearestDouble) {
  // Halfway between 9007199254740992 and ...994: ties go to the even one;
  // a trailing non-zero digit tips it up.
  EXPECT_EQ(Canon("9007199254740993.0"), "9007199254740992");
  EXPECT_EQ(Canon("9007199254740993.0000000000000001"), "9007199254740994");
  EXPECT_EQ(Canon("2.2250738585072011e-308"), "2.225073858507201e-308");
}

TEST(CanonicalJsonTest, RoundsNumbersBelowTheSmallestSubnormalToZero) {
  EXPECT_EQ(Canon("[1e-400, -1e-400, 2e-324, 3e-324]"), "[0,0,0,5e-324]");
}

TEST(CanonicalJsonTest, RefusesNumbersThatOverflowADouble) {
  EXPECT_THAT(Refusal("1e400"), HasSubstr("number out of range"));
  EXPECT_THAT(Refusal("{\"a\":[0,-1e400]}"), HasSubstr("number out of range (overflows IEEE 754 double): "
                                                       "-1e400 at /a/1"));
  EXPECT_THAT(Refusal("1.8e308"), HasSubstr("number out of range"));
  EXPECT_EQ(Canon("1.7976931348623157e308"), "1.7976931348623157e+308");
}

TEST(CanonicalJsonTest, RefusesNanAndInfinityLiterals) {
  EXPECT_THAT(Refusal("NaN"), HasSubstr("invalid JSON at byte 1"));
  EXPECT_THAT(Refusal("[Infinity]"), HasSubstr("invalid JSON"));
  EXPECT_THAT(Refusal("-Infinity"), HasSubstr("invalid JSON"));
}

// --- Strings and names --------------------------------------------------

TEST(CanonicalJsonTest, EscapesOnlyQuoteBackslashAndControlCharacters) {
  EXPECT_EQ(Canon(R"(["\u0000\u0001\u001f", "\b\t\n\f\r", "\"\\"])"), R"(["\u0000\u0001\u001f","\b\t\n\f\r","\"\\"])");
  EXPECT_EQ(Canon(R"(["\/", "\u007f", "\u00e9\u20ac", "\ud83d\ude00"])"),
            "[\"/\",\"\x7f\",\"\xc3\xa9\xe2\x82\xac\",\"\xf0\x9f\x98\x80\"]");
  EXPECT_EQ(Canon(R"("\u001F\u000B")"), R"("\u001f\u000b")");
}

TEST(CanonicalJsonTest, SortsMemberNamesByUtf16CodeUnits) {
  // The RFC 8785 section 3.2.3 order: U+1F600 (a surrogate pair, 0xD83D...)
  // sorts before U+FB33 although its code point is larger.
  EXPECT_EQ(Canon(R"({"\ufb33":6,"\ud83d\ude00":5,"\u20ac":4,"\u00f6":3,)"
                  R"("\u0080":2,"1":1,"\r":0})"),
            "{\"\\r\":0,\"1\":1,\"\xc2\x80\":2,\"\xc3\xb6\":3,\"\xe2\x82\xac\":4,"
            "\"\xf0\x9f\x98\x80\":5,\"\xef\xac\xb3\":6}");
  EXPECT_EQ(Canon(R"({"\ue000":1,"\ud800\udc00":0})"), "{\"\xf0\x90\x80\x80\":0,\"\xee\x80\x80\":1}");
}

TEST(CanonicalJsonTest, SortsAShorterNameBeforeItsExtensions) {
  EXPECT_EQ(Canon(R"({"ab":2,"":0,"a":1,"b":3})"), R"({"":0,"a":1,"ab":2,"b":3})");
}

TEST(CanonicalJsonTest, SortsObjectsAtEveryDepthAndKeepsArrayOrder) {
  EXPECT_EQ(Canon(R"([{"b":[{"d":1,"c":2}],"a":0},3,1,2])"), R"([{"a":0,"b":[{"c":2,"d":1}]},3,1,2])");
}

TEST(CanonicalJsonTest, KeepsUnicodeUnnormalized) {
  EXPECT_EQ(Canon(R"("A\u030a")"), "\"A\xcc\x8a\"");
  EXPECT_EQ(Canon("\"\xc3\x85\""), "\"\xc3\x85\"");
}

TEST(CanonicalJsonTest, RefusesDuplicateMemberNames) {
  EXPECT_EQ(Refusal(R"({"a":1,"a":2})"), "duplicate member name \"a\" in object at top level");
  EXPECT_EQ(Refusal(R"({"x":[{"b":1,"a":1,"a":1}]})"), "duplicate member name \"a\" in object at /x/0");
}

TEST(CanonicalJsonTest, RefusesNamesThatAreDuplicatesOnlyAfterUnescaping) {
  EXPECT_THAT(Refusal(R"({"a":1,"\u0061":2})"), HasSubstr("duplicate member name \"a\""));
  EXPECT_THAT(Refusal(R"({"a/b~":{"\n":1,"\u000a":2}})"),
              HasSubstr("duplicate member name \"\\n\" in object at /a~1b~0"));
}

TEST(CanonicalJsonTest, AcceptsTheSameNameInDifferentObjects) {
  EXPECT_EQ(Canon(R"({"a":{"a":1},"b":{"a":2}})"), R"({"a":{"a":1},"b":{"a":2}})");
}

TEST(CanonicalJsonTest, RefusesLoneSurrogateEscapes) {
  EXPECT_THAT(Refusal(R"("\ud800")"), HasSubstr("lone surrogate"));
  EXPECT_THAT(Refusal(R"("\udc00")"), HasSubstr("lone surrogate"));
  EXPECT_THAT(Refusal(R"(["\ud83dx"])"), HasSubstr("lone surrogate"));
  EXPECT_THAT(Refusal(R"({"\ude00":1})"), HasSubstr("lone surrogate"));
  EXPECT_THAT(Refusal(R"("\ude00\ud83d")"), HasSubstr("lone surrogate"));
}

TEST(CanonicalJsonTest, RefusesBytesThatAreNotUtf8) {
  EXPECT_THAT(Refusal("\"\xff\""), HasSubstr("invalid UTF-8"));
  EXPECT_THAT(Refusal("\"\xc0\xaf\""), HasSubstr("invalid UTF-8"));          // overlong
  EXPECT_THAT(Refusal("\"\xed\xa0\x80\""), HasSubstr("invalid UTF-8"));      // raw surrogate
  EXPECT_THAT(Refusal("\"\xf4\x90\x80\x80\""), HasSubstr("invalid UTF-8"));  // > U+10FFFF
  EXPECT_THAT(Refusal("{\"\xe2\x82\":1}"), HasSubstr("invalid UTF-8"));      // truncated
}

TEST(CanonicalJsonTest, AcceptsNoncharacters) { EXPECT_EQ(Canon(R"("\uffff\ufdd0")"), "\"\xef\xbf\xbf\xef\xb7\x90\""); }

// --- Structure ------------------------------------------------------------

TEST(CanonicalJsonTest, AcceptsTopLevelScalars) {
  EXPECT_EQ(Canon(" null "), "null");
  EXPECT_EQ(Canon("true"), "true");
  EXPECT_EQ(Canon("\"x\""), "\"x\"");
  EXPECT_EQ(Canon("\t-12.50\r\n"), "-12.5");
}

TEST(CanonicalJsonTest, RefusesANulByteAnywhere) {
  // nlohmann's lexer, which an earlier version used, stopped at a NUL byte
  // and so accepted whatever followed it.
  using namespace std::string_literals;
  EXPECT_EQ(Refusal("[1]\0"s), "invalid JSON at byte 4: unexpected data after the top-level value");
  EXPECT_EQ(Refusal("[1]\0[2]"s), "invalid JSON at byte 4: unexpected data after the top-level value");
  EXPECT_THAT(Refusal("\"a\0\""s), HasSubstr("control character U+0000"));
}

TEST(CanonicalJsonTest, SkipsALeadingByteOrderMark) { EXPECT_EQ(Canon("\xef\xbb\xbf{ }"), "{}"); }

TEST(CanonicalJsonTest, RefusesMalformedJsonWithAOneLineReason) {
  EXPECT_THAT(Refusal(""), HasSubstr("invalid JSON at byte"));
  EXPECT_THAT(Refusal("{\"a\":1} x"), HasSubstr("invalid JSON at byte"));
  EXPECT_THAT(Refusal("[1,]"), HasSubstr("invalid JSON"));
  EXPECT_THAT(Refusal("{'a':1}"), HasSubstr("invalid JSON"));
  EXPECT_THAT(Refusal("[1] // comment"), HasSubstr("invalid JSON"));
  EXPECT_THAT(Refusal("\"line\nbreak\""), HasSubstr("control character"));
  EXPECT_THAT(Refusal("[01]"), HasSubstr("invalid JSON"));
  EXPECT_THAT(Refusal("\"\\x\""), HasSubstr("invalid JSON"));
}

std::string Nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

TEST(CanonicalJsonTest, AcceptsNestingUpToTheLimit) {
  EXPECT_EQ(Canon(Nested(kMaxNestingDepth)), Nested(kMaxNestingDepth));
  std::string objects;
  for (int i = 0; i < kMaxNestingDepth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kMaxNestingDepth, '}');
  EXPECT_EQ(Canon(objects), objects);
}

TEST(CanonicalJsonTest, RefusesNestingOneLevelBeyondTheLimit) {
  EXPECT_EQ(Refusal(Nested(kMaxNestingDepth + 1)), "nesting deeper than " + std::to_string(kMaxNestingDepth));
}

TEST(CanonicalJsonTest, RefusesNestingOneHundredThousandDeepWithoutCrashing) {
  EXPECT_THAT(Refusal(Nested(100000)), HasSubstr("nesting deeper than"));
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  EXPECT_THAT(Refusal(objects), HasSubstr("nesting deeper than"));
  EXPECT_THAT(Refusal(std::string(100000, '[')), HasSubstr("nesting deeper than"));
}

TEST(CanonicalJsonTest, HonorsALowerNestingLimitFromOptions) {
  CanonicalizeOptions options;
  options.max_nesting_depth = 2;
  EXPECT_TRUE(CanonicalizeJson("[[1]]", options).has_value());
  Result<std::string> r = CanonicalizeJson("[[[1]]]", options);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "nesting deeper than 2");
}

TEST(CanonicalJsonTest, RefusesNestingLimitsOutsideTheAllowedRange) {
  for (int depth : {0, -1, kMaxNestingDepth + 1}) {
    CanonicalizeOptions options;
    options.max_nesting_depth = depth;
    Result<std::string> r = CanonicalizeJson("1", options);
    ASSERT_FALSE(r.has_value()) << depth;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  }
}

// --- The one-pass canonicalizer's own paths -------------------------------

// The UTF-16 code units of well-formed UTF-8: the order RFC 8785 names,
// computed the slow way as a reference for jcs::CompareUtf16.
std::u16string Utf16(std::string_view utf8) {
  std::u16string out;
  for (std::size_t i = 0; i < utf8.size();) {
    auto lead = static_cast<unsigned char>(utf8[i]);
    int length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    std::uint32_t cp = length == 1 ? lead : lead & (0x7F >> length);
    for (int j = 1; j < length; ++j) cp = (cp << 6) | (static_cast<unsigned char>(utf8[i + j]) & 0x3F);
    i += static_cast<std::size_t>(length);
    if (cp < 0x10000) {
      out.push_back(static_cast<char16_t>(cp));
    } else {
      out.push_back(static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF)));
    }
  }
  return out;
}

TEST(CanonicalJsonTest, ComparesNamesByUtf16CodeUnitsWithoutConvertingThem) {
  // Code points at the edges of every UTF-8 length and of the ranges whose
  // UTF-16 order differs from code point order.
  const std::uint32_t points[] = {0x0,    0x41,   0x7F,   0x80,    0x7FF,   0x800,   0xD7FF,   0xE000,  0xEFFF,
                                  0xF000, 0xFB33, 0xFFFF, 0x10000, 0x1F600, 0xFFFFF, 0x100000, 0x10FFFF};
  std::vector<std::string> names = {""};
  for (std::uint32_t a : points) {
    std::string one;
    jcs::AppendUtf8(a, &one);
    names.push_back(one);
    for (std::uint32_t b : {0x41u, 0xE000u, 0x10000u}) {
      std::string two = one;
      jcs::AppendUtf8(b, &two);
      names.push_back(two);
    }
  }
  for (const std::string& a : names) {
    for (const std::string& b : names) {
      std::u16string ua = Utf16(a), ub = Utf16(b);
      int expected = ua < ub ? -1 : ub < ua ? 1 : 0;
      int got = jcs::CompareUtf16(a, b);
      EXPECT_EQ(got < 0   ? -1
                : got > 0 ? 1
                          : 0,
                expected)
          << ::testing::PrintToString(a) << " vs " << ::testing::PrintToString(b);
    }
  }
}

TEST(CanonicalJsonTest, SortsNamesByTheirUnescapedTextNotTheirEscapes) {
  // Escaped, "\n" < "\"" < "A" < "\\" as the characters 0x0A 0x22 0x41 0x5C.
  EXPECT_EQ(Canon(R"({"\\":3,"\u0041":1,"\"":2,"\n":0})"), R"({"\n":0,"\"":2,"A":1,"\\":3})");
}

TEST(CanonicalJsonTest, RewritesOutOfOrderObjectsNestedInOutOfOrderObjects) {
  EXPECT_EQ(Canon(R"({"b":{"d":1,"c":[{"f":"x","e":[]}]},"a":[3,{"z":{},"y":{"q":2,"p":1}}]})"),
            R"({"a":[3,{"y":{"p":1,"q":2},"z":{}}],"b":{"c":[{"e":[],"f":"x"}],"d":1}})");
  EXPECT_EQ(Canon(R"({ "a" : { "c" : 1 , "b" : 2 } , "b" : [ ] })"), R"({"a":{"b":2,"c":1},"b":[]})");
}

TEST(CanonicalJsonTest, NamesTheEnclosingPathInErrorsAfterSiblingsWereReordered) {
  EXPECT_EQ(Refusal(R"({"b":{"y":1,"x":2},"a":[1,{"d":0,"c":-1e999}]})"),
            "number out of range (overflows IEEE 754 double): -1e999 at /a/1/c");
  EXPECT_EQ(Refusal(R"([{"b":0,"a":0},{"k":[{}, {"s":1,"r":2,"s":3}]}])"),
            "duplicate member name \"s\" in object at /1/k/1");
}

TEST(CanonicalJsonTest, ReportsOneBasedByteOffsetsOfTheOffendingByte) {
  EXPECT_EQ(Refusal("[1,]"), "invalid JSON at byte 4: expected a value");
  EXPECT_EQ(Refusal("{\"a\":1,}"), "invalid JSON at byte 8: expected a member name");
  EXPECT_EQ(Refusal("{\"a\" 1}"), "invalid JSON at byte 6: expected ':' after a member name");
  EXPECT_EQ(Refusal("[1 2]"), "invalid JSON at byte 4: expected ',' or ']' after an array element");
  EXPECT_EQ(Refusal("{\"a\":1 \"b\"}"), "invalid JSON at byte 8: expected ',' or '}' after an object member");
  EXPECT_EQ(Refusal("[1] x"), "invalid JSON at byte 5: unexpected data after the top-level value");
  EXPECT_EQ(Refusal("[1"), "invalid JSON at byte 3: expected ',' or ']' after an array element");
  EXPECT_EQ(Refusal("\"ab"), "invalid JSON at byte 4: unexpected end of input in a string");
  EXPECT_EQ(Refusal("[-]"), "invalid JSON at byte 3: invalid number; expected a digit");
  EXPECT_EQ(Refusal("1.e5"), "invalid JSON at byte 3: invalid number; expected a digit after '.'");
  EXPECT_EQ(Refusal("1e+"), "invalid JSON at byte 4: invalid number; expected a digit in the exponent");
  EXPECT_EQ(Refusal("[tru]"), "invalid JSON at byte 2: invalid literal; expected true, false or null");
  EXPECT_EQ(Refusal("\"a\tb\""), "invalid JSON at byte 3: control character U+0009 in a string must be escaped");
  EXPECT_EQ(Refusal(R"("\u12g4")"), "invalid JSON at byte 2: \\u must be followed by four hex digits");
  EXPECT_EQ(Refusal(R"("\u-123")"), "invalid JSON at byte 2: \\u must be followed by four hex digits");
  EXPECT_EQ(Refusal("\"abcdefghij\xff\""), "invalid UTF-8 at byte 12");
  EXPECT_EQ(Refusal(R"(["ok","\ud83d\u0041"])"), "lone surrogate in string at byte 8");
}

// A string literal whose plain bytes surround `special` at every offset, so
// that every byte lane of the 8-byte scan meets it.
TEST(CanonicalJsonTest, EscapesSpecialCharactersAtEveryOffsetOfALongString) {
  const std::pair<std::string, std::string> cases[] = {{"\\\"", "\\\""},
                                                       {"\\\\", "\\\\"},
                                                       {"\\u001f", "\\u001f"},
                                                       {"\\n", "\\n"},
                                                       {"\\/", "/"},
                                                       {"\x7f", "\x7f"},
                                                       {"\xc3\xa9", "\xc3\xa9"},
                                                       {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
                                                       {"\\u00e9", "\xc3\xa9"},
                                                       {"\\ud83d\\ude00", "\xf0\x9f\x98\x80"}};
  for (const auto& [in, out] : cases) {
    for (std::size_t before = 0; before < 20; ++before) {
      std::string a(before, 'a'), b(19 - before, 'b');
      EXPECT_EQ(Canon("\"" + a + in + b + "\""), "\"" + a + out + b + "\"") << in << " after " << before;
      EXPECT_EQ(Canon("{\"" + a + in + b + "\":1}"), "{\"" + a + out + b + "\":1}") << in << " after " << before;
    }
  }
  for (std::size_t before = 0; before < 20; ++before) {
    std::string a(before, 'a');
    EXPECT_THAT(Refusal("\"" + a + "\xc3\x28" + "bbbbbbbbbb\""),
                HasSubstr("invalid UTF-8 at byte " + std::to_string(before + 2)));
    EXPECT_THAT(Refusal("\"" + a + "\x01" + "bbbbbbbbbb\""), HasSubstr("control character U+0001"));
  }
}

TEST(CanonicalJsonTest, CopiesShortDecimalsAsTheyAreAndFormatsTheRestFromTheirDouble) {
  EXPECT_EQ(Canon("[0.000001, 0.0000001, 1.00000000000000001, 123456789012345, 1234567890123456]"),
            "[0.000001,1e-7,1,123456789012345,1234567890123456]");
  EXPECT_EQ(Canon("[-0.5, 1.50, 100.25, 1.000, 0.0, -0.0, 12345678901234567890]"),
            "[-0.5,1.5,100.25,1,0,0,12345678901234567000]");
  EXPECT_EQ(Canon("[1E400, 0]"), "<error: number out of range (overflows IEEE 754 double): 1E400 at /0>");
  EXPECT_EQ(Canon("[0.001e311, 100e306, 0e99999999999999999999, 1e-99999999999999999999, -0.0001e-321]"),
            "[1e+308,1e+308,0,0,0]");
  EXPECT_THAT(Refusal("1e99999999999999999999"), HasSubstr("number out of range"));
  EXPECT_THAT(Refusal("0.000001e315"), HasSubstr("number out of range"));
  // Every spelling must agree with the double nearest to it: first at the
  // edges of the range laid out from the digits themselves (15 significant
  // digits, decimal exponents -300 to 300), then at random.
  for (std::string text : {"1e299", "1e300", "1e-301", "1e-302", "123456789012345e285", "123456789012345e286",
                           "0.00000000000000123456789012345e-286", "-1000000000000001", "100000000000000.1",
                           "999999999999999e6", "0.100000000000000000000e2", "4.9406564584124654e-324"}) {
    double value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    EXPECT_EQ(Canon(text), *jcs::FormatNumber(value)) << text;
  }
  std::uint64_t state = 42;
  const auto next = [&state] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int i = 0; i < 50000; ++i) {
    std::string text = (next() % 2 ? "-" : "") + std::to_string(next() % 4 == 0 ? 0 : next() % 100000000);
    if (next() % 4 != 0) {
      text += ".";
      std::size_t frac = 1 + next() % 17;
      for (std::size_t j = 0; j < frac; ++j) text += static_cast<char>('0' + (next() % 3 == 0 ? 0 : next() % 10));
    }
    if (next() % 3 == 0) {  // an exponent, now and then beyond a double's range
      const char* signs[] = {"e", "E+", "e-"};
      text += signs[next() % 3] + std::to_string(next() % 4 == 0 ? next() % 400 : next() % 30);
    }
    double value = 0;
    std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow is 0; overflow is refused.
      std::string canon = Canon(text);
      EXPECT_TRUE(canon == "0" || canon.starts_with("<error: number out of range")) << text << " " << canon;
      continue;
    }
    EXPECT_EQ(Canon(text), *jcs::FormatNumber(value)) << text;
  }
}

// --- Fingerprints -------------------------------------------------------

TEST(FingerprintTest, HashesTheCanonicalFormWithSha256) {
  Result<Fingerprint> f = FingerprintJson(R"({ "currency": "usd", "amount": 1000 })");
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_EQ(f->canonical, R"({"amount":1000,"currency":"usd"})");
  EXPECT_EQ(f->sha256_hex, "a223b60dc6adbc2911e7c073889b220df1181c5534fa6be58c3a70981c354c54");
}

TEST(FingerprintTest, IgnoresMemberOrderWhitespaceEscapesAndNumberSpelling) {
  const char* spellings[] = {
      R"({"amount":1000,"currency":"usd","tags":[1.5,"a"]})",
      R"({"tags":[1.50,"a"],"currency":"usd","amount":1000})",
      "{\n  \"currency\" : \"\\u0075sd\",\n  \"amount\" : 1e3,\n"
      "  \"tags\" : [ 15E-1 , \"\\u0061\" ]\n}\n",
      R"({"amount":1000.000,"tags":[0.15e1,"a"],"currency":"u\u0073d"})",
  };
  Result<Fingerprint> first = FingerprintJson(spellings[0]);
  ASSERT_TRUE(first.has_value());
  for (const char* body : spellings) {
    Result<Fingerprint> f = FingerprintJson(body);
    ASSERT_TRUE(f.has_value()) << body << ": " << f.error().ToString();
    EXPECT_EQ(f->sha256_hex, first->sha256_hex) << body;
  }
}

TEST(FingerprintTest, DiffersWhenAValueOrArrayOrderDiffers) {
  Result<Fingerprint> a = FingerprintJson(R"({"amount":1000,"tags":[1,2]})");
  Result<Fingerprint> b = FingerprintJson(R"({"amount":1001,"tags":[1,2]})");
  Result<Fingerprint> c = FingerprintJson(R"({"amount":1000,"tags":[2,1]})");
  Result<Fingerprint> d = FingerprintJson(R"({"amount":"1000","tags":[1,2]})");
  ASSERT_TRUE(a && b && c && d);
  EXPECT_NE(a->sha256_hex, b->sha256_hex);
  EXPECT_NE(a->sha256_hex, c->sha256_hex);
  EXPECT_NE(a->sha256_hex, d->sha256_hex);
}

TEST(FingerprintTest, RefusesTheSameInputsAsCanonicalization) {
  Result<Fingerprint> f = FingerprintJson(R"({"a":1,"a":1})");
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey
