#include "util/planted_bug.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace phasekey {

#ifdef PHASEKEY_CRASH_POINTS
bool PlantedBug(std::string_view name) {
  static const std::string planted = [] {
    const char* env = std::getenv("PHASEKEY_PLANTED_BUG");
    return std::string(env != nullptr ? env : "");
  }();
  return !planted.empty() && planted == name;
}

int PlantedBugRepeats(const std::string& id) {
  static std::mutex mu;
  static std::map<std::string, int> seen;
  std::lock_guard<std::mutex> lock(mu);
  return seen[id]++;
}
#endif

}  // namespace phasekey
