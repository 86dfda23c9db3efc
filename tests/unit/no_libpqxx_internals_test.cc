// Issue 31: nothing in the engine subclasses a libpqxx class or uses
// pqxx::internal, so that a new libpqxx (Debian 13 ships 7.x) cannot break
// it from inside. The engine uses libpqxx's public API, and libpq itself
// where libpqxx offers nothing public (workers/redrive_listener.cc). This
// test reads the engine's sources (comments ignored) and fails, naming file
// and line, on either.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace phasekey {
namespace {

namespace fs = std::filesystem;

// A class or struct head whose base list names a pqxx:: class, e.g.
// "class Tx final : public pqxx::dbtransaction" or "struct R : pqxx::largeobject".
const std::regex kSubclass(R"(\b(class|struct)\s+\w+(\s+final)?\s*:[^;{]*\bpqxx::)");
const std::regex kInternal(R"(\bpqxx::internal\b)");

// Skips the string or character literal that starts at `i` (its opening
// quote); returns the index of its closing quote.
std::size_t SkipLiteral(const std::string& t, std::size_t i) {
  const char quote = t[i];
  for (++i; i < t.size() && t[i] != quote; ++i) {
    if (t[i] == '\\') ++i;
  }
  return i;
}

// `text` with // and /* */ comments blanked out (literals kept).
std::string WithoutComments(const std::string& text) {
  std::string out = text;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "R\"") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(out[i - 1])))) {
      const std::size_t open = out.find('(', i);
      if (open == std::string::npos) break;
      const std::string close = ")" + out.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = out.find(close, open);
      i = end == std::string::npos ? out.size() : end + close.size() - 1;
    } else if (out[i] == '"' || out[i] == '\'') {
      i = SkipLiteral(out, i);
    } else if (out.compare(i, 2, "//") == 0) {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      const std::size_t end = std::min(out.find("*/", i + 2), out.size() - 2) + 2;
      for (; i < end; ++i) {
        if (out[i] != '\n') out[i] = ' ';
      }
      --i;  // the comment's last character
    }
  }
  return out;
}

// "path:line: what" for every offence in `text`.
std::vector<std::string> Offences(const std::string& path, const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(WithoutComments(text));
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (std::regex_search(line, kSubclass)) out.push_back(path + ":" + std::to_string(n) + ": subclasses libpqxx");
    if (std::regex_search(line, kInternal)) out.push_back(path + ":" + std::to_string(n) + ": uses pqxx::internal");
  }
  return out;
}

TEST(NoLibpqxxInternalsTest, TheEngineNeitherSubclassesLibpqxxNorUsesItsInternals) {
  const fs::path root = PHASEKEY_SOURCE_DIR;
  std::vector<std::string> offences;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "engine")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    ++files;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    for (auto& o : Offences(fs::relative(e.path(), root).string(), text.str())) offences.push_back(std::move(o));
  }
  std::string report;
  for (const auto& o : offences) report += "  " + o + "\n";
  EXPECT_TRUE(offences.empty()) << "libpqxx subclassed or its internals used (public API only, issue 31):\n" << report;
  EXPECT_GT(files, 50) << "found too few engine sources under " << root;
}

// The scanner itself flags what the rule forbids and passes the rest.
TEST(NoLibpqxxInternalsTest, TheScannerFlagsSubclassesAndInternalsOnly) {
  EXPECT_EQ(Offences("a.h", "class Tx final : public pqxx::dbtransaction {").size(), 1u);
  EXPECT_EQ(Offences("a.h", "struct RawConnection : pqxx::largeobject {").size(), 1u);
  EXPECT_EQ(Offences("a.h", "class R : public Base, private pqxx::notification_receiver {").size(), 1u);
  EXPECT_EQ(Offences("a.cc", "    : pqxx::internal::namedclass{\"phasekey::Tx\"},").size(), 1u);
  EXPECT_TRUE(Offences("a.h", "class Tx final {\n  std::unique_ptr<pqxx::nontransaction> work_;").empty());
  EXPECT_TRUE(Offences("a.h", "Status Run(const std::function<void(pqxx::connection&)>& fn);").empty());
  EXPECT_TRUE(Offences("a.h", "int x = ok ? 1 : pqxx::oid_none;").empty());
  EXPECT_TRUE(Offences("a.h", "// once: class Tx : public pqxx::dbtransaction, pqxx::internal").empty());
  EXPECT_TRUE(Offences("a.h", "/* class Tx : public pqxx::dbtransaction */").empty());
  EXPECT_EQ(Offences("a.cc", "if (c == '\"') x = 1; // \"\nstruct R : pqxx::largeobject {").size(), 1u);
}

}  // namespace
}  // namespace phasekey
