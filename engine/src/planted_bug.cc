#include "planted_bug.h"

#include <cstdlib>
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
#endif

}  // namespace phasekey
