// Where the shared RFC 8785 conformance vectors are. They are not copied into
// the repository; they live beside it in ../shared/testdata/jcs.
#ifndef PHASEKEY_TESTS_SUPPORT_TESTDATA_H_
#define PHASEKEY_TESTS_SUPPORT_TESTDATA_H_

#include <cstdlib>
#include <filesystem>
#include <string>

namespace phasekey::testing {

// $PHASEKEY_JCS_TESTDATA, else <source>/../shared/testdata/jcs, else
// /work/shared/testdata/jcs (this workplace's copy, for a clone that does not
// sit beside shared/). Returns the first that exists, or the first candidate
// (so a test fails naming the path it tried).
inline std::string JcsTestDataDir() {
  const char* env = std::getenv("PHASEKEY_JCS_TESTDATA");
  const std::string candidates[] = {env != nullptr ? env : "",
                                    std::string(PHASEKEY_SOURCE_DIR) + "/../shared/testdata/jcs",
                                    "/work/shared/testdata/jcs"};
  for (const auto& c : candidates) {
    if (!c.empty() && std::filesystem::exists(c + "/README.md")) return c;
  }
  return candidates[1];
}

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_TESTDATA_H_
