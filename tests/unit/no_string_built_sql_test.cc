// No SQL built from strings in the engine (engine/src, engine/tools) or the phase library
// (phases/): every statement is a named query from sql/queries (prepared on
// each connection, parameters bound) or a migration file from
// sql/migrations. This test reads the sources and fails, naming file and
// line, on
//   - a string literal holding SQL (a statement keyword in SQL context):
//     SQL belongs in sql/, where it is reviewed as SQL;
//   - a libpqxx statement call (exec, exec0, exec1, exec_params*,
//     exec_prepared, prepare) whose statement argument is anything but one
//     of the few reviewed expressions listed in kReviewed below: above all,
//     never a concatenation or a format. A named query runs through the
//     checked call pg::Exec/Exec0/Exec1 (or pg::ExecuteText) with its typed
//     handle sql::q::<Name>; the compiler refuses an unknown name or a wrong
//     number of arguments there (issue 31), so this test only counts those
//     calls, and refuses a libpqxx call handed a query's catalog text, which
//     would step around the checked call and the statement mode.
// Comments are ignored; string literals are scanned with escapes and raw
// strings understood.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace phasekey {
namespace {

namespace fs = std::filesystem;

// Statement arguments that are not named queries but are known safe, by
// file (relative to the source root) and exact expression.
const std::set<std::pair<std::string, std::string>> kReviewed = {
    // The text of a migration file from sql/migrations, compiled in.
    {"engine/src/pg/migrator.cc", "next->sql"},
    // Registering the named queries of sql/queries: name and text.
    {"engine/src/pg/pool.cc", "q.name"},
    // SQL PREPARE of the simple-protocol named queries (PrepareText: the
    // catalog's text under its quoted name).
    {"engine/src/pg/pool.cc", "simple"},
    // Tx::Send: what Tx builds from EXECUTEs of named queries whose
    // arguments libpqxx quoted (ExecuteText), with BEGIN in front while
    // BEGIN is pending and COMMIT behind the queued ones.
    {"engine/src/pg/transaction.cc", "sql"},
    // pg::Exec (statements.h): a named query's handle, by its name when
    // prepared, by its catalog text when not.
    {"engine/src/pg/statements.h", "std::string(query.name)"},
    {"engine/src/pg/statements.h", "sql::Query(query)"},
};

struct Source {
  std::string path;  // relative to the source root
  std::string text;
};

std::vector<Source> Sources() {
  const fs::path root = PHASEKEY_SOURCE_DIR;
  std::vector<Source> out;
  for (const char* dir : {"engine/src", "engine/tools", "phases"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      out.push_back({fs::relative(e.path(), root).string(), text.str()});
    }
  }
  return out;
}

int LineOf(const std::string& text, std::size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n'));
}

// The text with comments blanked out and, separately, every string literal
// (its contents and where it starts).
struct Scanned {
  std::string code;  // comments replaced by spaces, literals kept
  std::vector<std::pair<std::size_t, std::string>> literals;
};

Scanned Scan(const std::string& t) {
  Scanned s{t, {}};
  for (std::size_t i = 0; i < t.size();) {
    if (t.compare(i, 2, "//") == 0) {
      const std::size_t end = std::min(t.find('\n', i), t.size());
      std::fill(s.code.begin() + static_cast<long>(i), s.code.begin() + static_cast<long>(end), ' ');
      i = end;
    } else if (t.compare(i, 2, "/*") == 0) {
      const std::size_t end = std::min(t.find("*/", i + 2) + 2, t.size());
      std::fill(s.code.begin() + static_cast<long>(i), s.code.begin() + static_cast<long>(end), ' ');
      i = end;
    } else if (t.compare(i, 2, "R\"") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(t[i - 1])))) {
      const std::size_t open = t.find('(', i);
      const std::string close = ")" + t.substr(i + 2, open - i - 2) + "\"";
      const std::size_t end = t.find(close, open);
      s.literals.push_back({i, t.substr(open + 1, end - open - 1)});
      i = end + close.size();
    } else if (t[i] == '"') {
      std::string lit;
      std::size_t j = i + 1;
      for (; j < t.size() && t[j] != '"'; ++j) {
        if (t[j] == '\\') ++j;
        lit += t[j];
      }
      s.literals.push_back({i, lit});
      i = j + 1;
    } else if (t[i] == '\'') {  // a character literal: skip, so '"' is no string
      std::size_t j = i + 1;
      for (; j < t.size() && t[j] != '\''; ++j) {
        if (t[j] == '\\') ++j;
      }
      i = j + 1;
    } else {
      ++i;
    }
  }
  return s;
}

// SQL in context: statement keywords as SQL is written in sql/ (upper case),
// and the unmistakable pairs in any case.
const std::regex kSqlPairs(R"(\b(insert\s+into|delete\s+from|select\s+[\w*,\s]+\s+from|update\s+\w+\s+set)\b)",
                           std::regex::icase);
const std::regex kUpperKeyword(
    R"(\b(SELECT|INSERT|UPDATE|DELETE|MERGE|CREATE|DROP|ALTER|TRUNCATE|GRANT|REVOKE|COPY|LISTEN|NOTIFY|VACUUM)\b)");
const std::regex kStatementCall(
    R"(\b(exec|exec0|exec1|exec_params|exec_params0|exec_params1|exec_prepared|prepare)\s*\()");
// The checked call of a named query (pg/statements.h, pg/transaction.h).
const std::regex kCheckedCall(R"(\b(Exec|Exec0|Exec1|ExecuteText)\s*\()");

// The first argument of the call whose '(' is at `open`, trimmed.
std::string FirstArgument(const std::string& code, std::size_t open) {
  int depth = 0;
  std::size_t i = open + 1;
  for (; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '"') {
      for (++i; i < code.size() && code[i] != '"'; ++i) {
        if (code[i] == '\\') ++i;
      }
      continue;
    }
    if (c == '(' || c == '{' || c == '[') ++depth;
    if (c == ')' || c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    }
    if (c == ',' && depth == 0) break;
  }
  std::string arg = code.substr(open + 1, i - open - 1);
  const auto first = arg.find_first_not_of(" \t\n");
  const auto last = arg.find_last_not_of(" \t\n");
  return first == std::string::npos ? "" : arg.substr(first, last - first + 1);
}

TEST(NoStringBuiltSqlTest, EngineAndPhasesRunOnlyNamedQueriesAndMigrationFiles) {
  const std::vector<Source> sources = Sources();
  ASSERT_GT(sources.size(), 10u) << "found no engine sources under " << PHASEKEY_SOURCE_DIR;
  std::vector<std::string> offences;
  std::size_t calls = 0, checked = 0;
  for (const Source& src : sources) {
    const Scanned s = Scan(src.text);
    for (const auto& [at, lit] : s.literals) {
      if (std::regex_search(lit, kUpperKeyword) || std::regex_search(lit, kSqlPairs)) {
        offences.push_back(src.path + ":" + std::to_string(LineOf(src.text, at)) + ": SQL in a string literal: \"" +
                           lit.substr(0, 80) + "\"");
      }
    }
    for (std::sregex_iterator it(s.code.begin(), s.code.end(), kStatementCall), end; it != end; ++it) {
      const std::size_t open = static_cast<std::size_t>(it->position(0) + it->length(0) - 1);
      const std::string arg = FirstArgument(s.code, open);
      ++calls;
      if (kReviewed.count({src.path, arg}) > 0) continue;
      offences.push_back(src.path + ":" + std::to_string(LineOf(src.text, open)) + ": " + (*it)[1].str() +
                         "( with a statement that is not a reviewed expression (use pg::Exec with sql::q::<Name>): " +
                         arg.substr(0, 80));
    }
    checked += static_cast<std::size_t>(
        std::distance(std::sregex_iterator(s.code.begin(), s.code.end(), kCheckedCall), std::sregex_iterator()));
  }
  std::string report;
  for (const auto& o : offences) report += "  " + o + "\n";
  EXPECT_TRUE(offences.empty()) << "string-built SQL (move it to sql/queries as a named query):\n" << report;
  EXPECT_GE(calls, 5u) << "the scan found too few libpqxx statement calls to be looking at the right code";
  EXPECT_GT(checked, 50u) << "the scan found too few checked calls (pg::Exec) to be looking at the right code";
}

// The scanner itself: it must flag what the rule forbids and pass what it
// allows, or the test above proves nothing.
TEST(NoStringBuiltSqlTest, TheScannerFlagsConcatenatedAndInlineSqlAndPassesNamedQueries) {
  const std::string bad = R"(
    tx.exec("SELECT * FROM t WHERE id = " + id);
    tx.exec_params(fmt::format("DELETE FROM {} WHERE x = $1", table), x);
    tx.exec0(sql + where);
    tx.exec_params(sql::Query(sql::q::KeyGet), a, b);
    std::string q = "update keys set state = 'x'";
  )";
  const std::string good = R"(
    pg::Exec(tx, sql::q::KeyGet, a, b);  // SELECT in a comment is fine
    pg::Exec1(tx, sql::q::KeyClaim, account, key, bucket);
    /* DELETE FROM in a block comment */
    std::string message = "the key was selected for the worker";
  )";
  const Scanned b = Scan(bad), g = Scan(good);
  int literal_hits = 0, call_hits = 0;
  for (const auto& [at, lit] : b.literals) {
    literal_hits += std::regex_search(lit, kUpperKeyword) || std::regex_search(lit, kSqlPairs);
  }
  for (std::sregex_iterator it(b.code.begin(), b.code.end(), kStatementCall), end; it != end; ++it) {
    const std::string arg = FirstArgument(b.code, static_cast<std::size_t>(it->position(0) + it->length(0) - 1));
    call_hits += kReviewed.count({"engine/src/x.cc", arg}) == 0;
  }
  EXPECT_EQ(literal_hits, 3);
  EXPECT_EQ(call_hits, 4);
  int good_literal_hits = 0;
  for (const auto& [at, lit] : g.literals) {
    good_literal_hits += std::regex_search(lit, kUpperKeyword) || std::regex_search(lit, kSqlPairs);
  }
  EXPECT_EQ(good_literal_hits, 0);
  EXPECT_EQ(std::distance(std::sregex_iterator(g.code.begin(), g.code.end(), kStatementCall), std::sregex_iterator()),
            0);
  EXPECT_EQ(std::distance(std::sregex_iterator(g.code.begin(), g.code.end(), kCheckedCall), std::sregex_iterator()), 2);
}

}  // namespace
}  // namespace phasekey
