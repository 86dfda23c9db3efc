// The docs cannot rot: every `phasekey` and `ride_booking` command shown in
// README.md and docs/*.md names a real subcommand with real flags, the
// reference tables hold what the code defines (docs/cli.md: every command and
// flag of `phasekey --help`; docs/operations.md: every metric of the
// registry with its labels; docs/http.md: every problem type the handler
// answers with), the ride flow's picture source matches what the binary
// draws, and every figure that comes from a test run is what its result file
// renders. (tests/docs/run_doc_blocks.py runs the shell blocks themselves.)
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "doc_results/doc_results.h"
#include "phasekey/metrics.h"

namespace phasekey {
namespace {

std::pair<int, std::string> Shell(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Command {
  std::string file, line, binary;
  std::vector<std::string> words, flags;
};

// Commands in ```sh blocks that start with one of our binaries.
std::vector<Command> DocumentedCommands() {
  std::vector<std::filesystem::path> files = {std::filesystem::path(PHASEKEY_SOURCE_DIR) / "README.md"};
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(PHASEKEY_SOURCE_DIR) / "docs")) {
    if (e.path().extension() == ".md") files.push_back(e.path());
  }
  const std::regex start(R"(^(?:build/cli/|build/examples/ride_booking/)?(phasekey|ride_booking)\s+(.*)$)");
  std::vector<Command> out;
  for (const auto& f : files) {
    std::istringstream in(Read(f));
    bool in_sh = false;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("```", 0) == 0) {
        in_sh = !in_sh && line.rfind("```sh", 0) == 0;
        continue;
      }
      std::smatch m;
      if (!in_sh || !std::regex_match(line, m, start)) continue;
      Command c{f.filename().string(), line, m[1].str(), {}, {}};
      std::istringstream words(m[2].str());
      bool subcommand = true;
      for (std::string w; words >> w;) {
        if (w == "#" || w == "&" || w == "--" || w == "|") break;
        if (w.rfind("--", 0) == 0) {
          subcommand = false;
          c.flags.push_back(w.substr(0, w.find('=')));
        } else if (subcommand && std::regex_match(w, std::regex("[a-z][a-z-]*"))) {
          c.words.push_back(w);
        } else {
          subcommand = false;
        }
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

TEST(DocsTest, EveryDocumentedCommandAndFlagExists) {
  const auto commands = DocumentedCommands();
  ASSERT_GE(commands.size(), 10u) << "the docs show the commands";
  for (const auto& c : commands) {
    const std::string binary = c.binary == "phasekey" ? PHASEKEY_CLI_PATH : RIDE_BOOKING_PATH;
    std::string cmd = binary;
    for (const auto& w : c.words) cmd += " " + w;
    auto [code, help] = Shell(cmd + " --help");
    EXPECT_EQ(code, 0) << c.file << ": " << c.line << "\n" << help;
    for (const auto& flag : c.flags) {
      EXPECT_NE(help.find(flag), std::string::npos) << c.file << ": " << c.line << ": no flag " << flag;
    }
  }
}

// One command of `phasekey` as its --help describes it.
struct CliCommand {
  std::vector<std::string> path;  // {"keys", "list"}
  std::set<std::string> flags;    // without --help
  bool leaf = true;
};

std::vector<CliCommand> CliCommands(const std::vector<std::string>& path = {}) {
  std::string cmd = PHASEKEY_CLI_PATH;
  for (const auto& w : path) cmd += " " + w;
  const auto [code, help] = Shell(cmd + " --help");
  EXPECT_EQ(code, 0) << cmd << " --help\n" << help;
  CliCommand me{path, {}, true};
  std::vector<CliCommand> out;
  std::istringstream in(help);
  std::string section;
  const std::regex flag(R"(^\s+(?:-[A-Za-z],)?(--[a-z0-9][a-z0-9-]*))");
  const std::regex sub(R"(^  ([a-z][a-z0-9-]*)\s)");
  std::vector<std::string> subcommands;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == ':' && line[0] != ' ') {
      section = line;
      continue;
    }
    std::smatch m;
    if (section == "Options:" && std::regex_search(line, m, flag) && m[1] != "--help") me.flags.insert(m[1]);
    if (section == "Subcommands:" && std::regex_search(line, m, sub)) subcommands.push_back(m[1]);
  }
  me.leaf = subcommands.empty();
  out.push_back(me);
  for (const auto& s : subcommands) {
    auto p = path;
    p.push_back(s);
    for (auto& c : CliCommands(p)) out.push_back(std::move(c));
  }
  return out;
}

std::string Join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

// docs/cli.md's table row of `phasekey <path>`: the row's first cell (the
// synopsis) and the whole row.
std::optional<std::pair<std::string, std::string>> CliRow(const std::string& cli_md, const std::string& path) {
  std::istringstream in(cli_md);
  const std::string start = "| `phasekey " + path;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(start, 0) != 0) continue;
    const char next = line[start.size()];
    if (next != ' ' && next != '`') continue;
    return std::make_pair(line.substr(0, line.find(" |", 2)), line);
  }
  return std::nullopt;
}

// Every command of `phasekey --help` (recursively) has its row in
// docs/cli.md, every flag of a command is in its row (or in a paragraph of
// the page that names the command, as "Where the database is" does for
// --database-url), and every flag a row's synopsis shows is the command's.
TEST(DocsTest, TheCliPageListsEveryCommandAndFlagOfPhasekeyHelp) {
  const std::string cli_md = Read(std::filesystem::path(PHASEKEY_SOURCE_DIR) / "docs/cli.md");
  std::vector<std::string> paragraphs;
  {
    std::string current;
    std::istringstream in(cli_md);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) {
        paragraphs.push_back(current);
        current.clear();
      } else {
        current += line + "\n";
      }
    }
    paragraphs.push_back(current);
  }
  const auto commands = CliCommands();
  ASSERT_GE(commands.size(), 10u);
  for (const auto& root_flag : commands.front().flags) {
    EXPECT_NE(cli_md.find("phasekey " + root_flag), std::string::npos) << "docs/cli.md does not mention " << root_flag;
  }
  for (const auto& c : commands) {
    if (c.path.empty() || !c.leaf) continue;
    const std::string path = Join(c.path);
    const auto row = CliRow(cli_md, path);
    if (!row) {
      ADD_FAILURE() << "docs/cli.md has no row for `phasekey " << path << "`";
      continue;
    }
    for (const auto& f : c.flags) {
      if (row->second.find(f) != std::string::npos) continue;
      const bool in_prose = std::any_of(paragraphs.begin(), paragraphs.end(), [&](const std::string& p) {
        return p.find(f) != std::string::npos && p.find("`" + c.path.front() + "`") != std::string::npos;
      });
      EXPECT_TRUE(in_prose) << "docs/cli.md: `phasekey " << path << "` has the flag " << f
                            << ", which its row does not show";
    }
    const std::regex shown(R"(--[a-z0-9][a-z0-9-]*)");
    for (std::sregex_iterator m(row->first.begin(), row->first.end(), shown), end; m != end; ++m) {
      EXPECT_TRUE(c.flags.contains(m->str()))
          << "docs/cli.md's row of `phasekey " << path << "` shows " << m->str() << ", which it does not have";
    }
  }
}

// Metric name -> its label names, from the text exposition format.
std::map<std::string, std::set<std::string>> ExposedMetrics(const std::string& exposition) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream in(exposition);
  const std::regex type(R"(^# TYPE (\S+) \S+$)");
  const std::regex label(R"(([a-z_]+)=")");
  std::string family;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, type)) {
      family = m[1];
      out[family];
      continue;
    }
    if (line.empty() || line[0] == '#' || family.empty()) continue;
    const std::string labels = line.substr(0, line.find(' '));
    for (std::sregex_iterator l(labels.begin(), labels.end(), label), end; l != end; ++l) {
      if ((*l)[1] != "le") out[family].insert((*l)[1]);
    }
  }
  return out;
}

// docs/operations.md's metric list ("## Metrics", up to the alerts) is the
// registry's: every family with its label names. Every metric the page
// names elsewhere (the alerts) exists.
TEST(DocsTest, TheOperationsPageListsEveryMetricWithItsLabels) {
  auto metrics = Metrics::Create();
  using std::chrono::milliseconds;
  metrics->Request("f", "completed", milliseconds(1));
  metrics->Claim("f", "inserted");
  metrics->Phase("f", "p", "moved", milliseconds(1));
  metrics->FencingRejection("f");
  metrics->Commit();
  metrics->Redrive("finished");
  metrics->DeadLetters(1);
  metrics->KeyStopped("f", "dead");
  metrics->Keys("active", 1);
  metrics->InboxDelivery("stripe", "applied");
  metrics->InboxUnparked("stripe", 1);
  metrics->InboxParked(1);
  metrics->SuspectedKeyRegeneration("f");
  metrics->SuspectedAbandonedAfter409("f");
  metrics->StrandedKeys("f", "p", 1);
  metrics->StrandedAnswer("f");
  metrics->WorkerPolled("reaper");
  const auto registry = ExposedMetrics(metrics->Exposition());
  ASSERT_GE(registry.size(), 10u);

  const std::string ops = Read(std::filesystem::path(PHASEKEY_SOURCE_DIR) / "docs/operations.md");
  const size_t begin = ops.find("## Metrics");
  const size_t end = ops.find("| alert | expression |", begin);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string list = ops.substr(begin, end - begin);
  std::map<std::string, std::set<std::string>> documented;
  const std::regex entry(R"(`(phasekey_[a-z0-9_]+)(?:\{([a-z_,]+)\})?`)");
  for (std::sregex_iterator m(list.begin(), list.end(), entry), e; m != e; ++m) {
    std::set<std::string> labels;
    std::istringstream in((*m)[2].str());
    for (std::string l; std::getline(in, l, ',');) labels.insert(l);
    documented[(*m)[1]] = labels;
  }
  for (const auto& [name, labels] : registry) {
    const auto it = documented.find(name);
    if (it == documented.end()) {
      ADD_FAILURE() << "docs/operations.md's metric list lacks " << name;
      continue;
    }
    EXPECT_EQ(it->second, labels) << "docs/operations.md: the labels of " << name;
  }
  for (const auto& [name, labels] : documented) {
    EXPECT_TRUE(registry.contains(name)) << "docs/operations.md lists " << name << ", which the registry lacks";
  }
  const std::regex any(R"(phasekey_[a-z0-9_]+)");
  for (std::sregex_iterator m(ops.begin(), ops.end(), any), e; m != e; ++m) {
    std::string name = m->str();
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (name.ends_with(suffix) && registry.contains(name.substr(0, name.size() - suffix.size()))) {
        name = name.substr(0, name.size() - suffix.size());
      }
    }
    EXPECT_TRUE(registry.contains(name)) << "docs/operations.md names " << m->str() << ", which the registry lacks";
  }
}

// docs/http.md's table of answers holds exactly the (status, problem type)
// pairs the HTTP handler and the Beast server answer with (their
// MakeProblem and Problem calls).
TEST(DocsTest, TheHttpPageListsEveryProblemTypeTheHandlerAnswersWith) {
  const std::filesystem::path source(PHASEKEY_SOURCE_DIR);
  std::set<std::string> code;
  const std::regex call(R"re(Problem\(\s*(\d{3}),\s*"([a-z-]+)")re");  // MakeProblem, or the server's Problem
  for (const char* f : {"engine/src/http/http_handler.cc", "engine/tools/server/beast_server.cc"}) {
    const std::string text = Read(source / f);
    for (std::sregex_iterator m(text.begin(), text.end(), call), e; m != e; ++m) {
      code.insert((*m)[1].str() + " " + (*m)[2].str());
    }
  }
  ASSERT_GE(code.size(), 10u) << "the handler's MakeProblem calls were not found";
  const std::string http_md = Read(source / "docs/http.md");
  std::set<std::string> documented;
  const std::regex row(R"re(\| (\d{3}) \| <a id="([a-z-]+)"></a>`([a-z-]+)` \|)re");
  for (std::sregex_iterator m(http_md.begin(), http_md.end(), row), e; m != e; ++m) {
    EXPECT_EQ((*m)[2], (*m)[3]) << "docs/http.md: the anchor and the slug differ";
    documented.insert((*m)[1].str() + " " + (*m)[3].str());
  }
  EXPECT_EQ(documented, code) << "docs/http.md's answers table against the MakeProblem calls";
}

TEST(DocsTest, TheRideFlowPictureSourceMatchesTheBinary) {
  auto [code, dot] = Shell(std::string(RIDE_BOOKING_PATH) + " flows graph create_ride");
  ASSERT_EQ(code, 0);
  EXPECT_EQ(dot, Read(std::filesystem::path(PHASEKEY_SOURCE_DIR) / "docs/img/ride_flow.dot"));
}

// The generated sections (tests/doc_results/doc_results.h) hold exactly
// what the result files the tests wrote render to, and no doc has a
// generated section nothing renders.
TEST(DocsTest, FiguresFromTestRunsMatchTheResultFilesTheTestsWrote) {
  const std::filesystem::path source(PHASEKEY_SOURCE_DIR);
  std::vector<doc_results::Section> sections;
  try {
    sections = doc_results::RenderSections(source);
  } catch (const std::exception& e) {
    FAIL() << "the result files cannot be rendered: " << e.what();
  }
  std::set<std::string> rendered;
  for (const auto& s : sections) {
    rendered.insert(s.doc + ":" + s.name);
    const auto text = doc_results::SectionText(Read(source / s.doc), s.name);
    ASSERT_TRUE(text.has_value()) << s.doc << " has no generated section " << s.name;
    EXPECT_EQ(*text, s.text) << s.doc << ": section " << s.name
                             << " is not what docs/results renders: run render_doc_results " << source.string();
  }
  const std::regex marker("<!-- generated:([a-z_]+) -->");
  for (const auto& e : std::filesystem::directory_iterator(source / "docs")) {
    if (e.path().extension() != ".md") continue;
    const std::string text = Read(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), marker), end; m != end; ++m) {
      EXPECT_TRUE(rendered.contains("docs/" + e.path().filename().string() + ":" + (*m)[1].str()))
          << e.path().filename() << ": generated section " << (*m)[1] << " has no result file behind it";
    }
  }
}

}  // namespace
}  // namespace phasekey
