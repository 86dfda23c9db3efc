// The engine's folders form layers, and nothing includes from a folder above
// its own (docs/architecture.md). This test reads every source of
// engine/src (the core) and engine/tools (the tools) and fails, naming file
// and line, on
//   - an #include "<folder>/..." of a folder of a higher or equal layer than
//     the including file's own folder (its own folder excepted);
//   - an #include of a folder this test does not know: a new folder gets its
//     layer here, on purpose;
//   - the core (engine/src, engine/include/phasekey/*.h) including the tools
//     ("phasekey/tools/...", or a folder of engine/tools).
// The libraries' CMake targets already keep phases/, client/ and the
// examples out of engine/src: they do not have it on their include path.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace phasekey {
namespace {

namespace fs = std::filesystem;

// A folder's layer: a file may include folders of lower layers only.
// The core's folders (engine/src) are below every folder of the tools
// (engine/tools).
const std::map<std::string, int> kCoreLayers = {
    {"util", 0},        {"sql", 0},                                 // helpers; the named-query catalog
    {"fingerprint", 1}, {"pg", 1},                                  // RFC 8785; pool, transactions, migrations
    {"flow", 2},        {"seal", 2},                                // flows, deploy gate, masks; sealing at rest
    {"runner", 3},      {"workers", 3}, {"inbox", 3}, {"http", 3},  // what applications run
};
const std::map<std::string, int> kToolLayers = {
    {"admin", 10},    {"server", 10},  {"embedded_postgres", 10},
    {"process", 10},  {"console", 11},  // on admin's queries
    {"commands", 12},                   // the operator commands, over admin and console
};

struct Violation {
  std::string where;
  std::string what;
};

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int LayerOf(const std::string& folder) {
  if (auto it = kCoreLayers.find(folder); it != kCoreLayers.end()) return it->second;
  if (auto it = kToolLayers.find(folder); it != kToolLayers.end()) return it->second;
  return -1;
}

// Checks one file of engine/<part> ("src" or "tools") in `folder` ("" for a
// file at the part's root, which may include any core folder).
void CheckFile(const fs::path& file, const std::string& part, const std::string& folder, std::vector<Violation>* out) {
  static const std::regex kInclude(R"re(^\s*#\s*include\s+"([A-Za-z_]+)/([^"]+)")re");
  std::istringstream lines(Read(file));
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, kInclude)) continue;
    const std::string target = m[1];
    const std::string where = file.string() + ":" + std::to_string(n);
    if (target == "phasekey") {
      if (part == "src" && m[2].str().rfind("tools/", 0) == 0) out->push_back({where, "the core includes the tools"});
      continue;
    }
    if (target == folder) continue;
    const int to = LayerOf(target);
    if (to < 0) {
      out->push_back({where, "includes from folder '" + target + "', which has no layer in layering_test.cc"});
      continue;
    }
    if (part == "src" && kToolLayers.count(target) > 0) {
      out->push_back({where, "the core includes the tools' folder '" + target + "'"});
      continue;
    }
    const int from = folder.empty() ? 1000 : LayerOf(folder);
    if (from < 0) {
      out->push_back({where, "is in folder '" + folder + "', which has no layer in layering_test.cc"});
    } else if (to >= from) {
      out->push_back({where, "'" + folder + "' (layer " + std::to_string(from) + ") includes from '" + target +
                                 "' (layer " + std::to_string(to) + "), which is not below it"});
    }
  }
}

std::vector<Violation> CheckEngine(const fs::path& engine) {
  std::vector<Violation> out;
  for (const std::string part : {"src", "tools"}) {
    for (const auto& e : fs::recursive_directory_iterator(engine / part)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      const fs::path rel = fs::relative(e.path(), engine / part);
      const std::string folder = rel.has_parent_path() ? rel.begin()->string() : "";
      CheckFile(e.path(), part, folder, &out);
    }
  }
  for (const auto& e : fs::directory_iterator(engine / "include" / "phasekey")) {
    if (e.is_regular_file()) CheckFile(e.path(), "src", "", &out);
  }
  return out;
}

std::string Describe(const std::vector<Violation>& violations) {
  std::string text;
  for (const Violation& v : violations) text += v.where + ": " + v.what + "\n";
  return text;
}

TEST(LayeringTest, NoFileOfTheEngineIncludesFromAFolderAboveItsOwn) {
  const fs::path engine = fs::path(PHASEKEY_SOURCE_DIR) / "engine";
  ASSERT_TRUE(fs::exists(engine / "src" / "runner")) << engine;
  const std::vector<Violation> violations = CheckEngine(engine);
  EXPECT_TRUE(violations.empty()) << Describe(violations);
}

// The check itself: a tree with one upward include, one include of the
// tools from the core and one unknown folder is reported three times.
TEST(LayeringTest, ACheckOfATreeWithUpwardIncludesReportsEachOfThem) {
  const fs::path root = fs::temp_directory_path() / ("layering_test_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "src" / "util");
  fs::create_directories(root / "src" / "pg");
  fs::create_directories(root / "tools" / "console");
  fs::create_directories(root / "include" / "phasekey");
  std::ofstream(root / "src" / "util" / "hex.cc") << "#include \"runner/key_limits.h\"\n";
  std::ofstream(root / "src" / "pg" / "pool.cc") << "#include \"util/hex.h\"\n#include \"phasekey/tools/x.h\"\n";
  std::ofstream(root / "tools" / "console" / "web.cc") << "#include \"pg/pool.h\"\n#include \"mystery/a.h\"\n";
  const std::vector<Violation> violations = CheckEngine(root);
  fs::remove_all(root);
  ASSERT_EQ(violations.size(), 3u) << Describe(violations);
  EXPECT_NE(Describe(violations).find("util/hex.cc:1: 'util' (layer 0) includes from 'runner'"), std::string::npos)
      << Describe(violations);
  EXPECT_NE(Describe(violations).find("pg/pool.cc:2: the core includes the tools"), std::string::npos);
  EXPECT_NE(Describe(violations).find("web.cc:2: includes from folder 'mystery'"), std::string::npos);
}

}  // namespace
}  // namespace phasekey
