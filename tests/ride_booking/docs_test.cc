// The docs cannot rot: every `phasekey` and `ride_booking` command shown in
// README.md and docs/*.md names a real subcommand with real flags, the
// ride flow's picture source matches what the binary draws, and every figure
// that comes from a test run is what its result file renders.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "doc_results/doc_results.h"

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
  const std::regex start(R"(^(?:build/engine/|build/examples/ride_booking/)?(phasekey|ride_booking)\s+(.*)$)");
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
