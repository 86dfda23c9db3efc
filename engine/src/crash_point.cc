#include "phasekey/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace phasekey {
namespace {

struct Armed {
  std::string name;
  long hit = 1;
};

const Armed& ArmedPoint() {
  static const Armed armed = [] {
    Armed a;
    const char* env = std::getenv("PHASEKEY_CRASH_AT");
    if (env == nullptr) return a;
    a.name = env;
    if (auto at = a.name.rfind('@'); at != std::string::npos) {
      a.hit = std::max(1L, std::strtol(a.name.c_str() + at + 1, nullptr, 10));
      a.name.resize(at);
    }
    return a;
  }();
  return armed;
}

}  // namespace

bool CrashPointsCompiledIn() {
#ifdef PHASEKEY_CRASH_POINTS
  return true;
#else
  return false;
#endif
}

void ReachCrashPoint(std::string_view name) {
  static std::atomic<long> hits{0};
  const Armed& armed = ArmedPoint();
  if (armed.name.empty() || armed.name != name) return;
  if (hits.fetch_add(1) + 1 != armed.hit) return;
  std::fprintf(stderr, "phasekey: crash point %s reached: SIGKILL\n", armed.name.c_str());
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached
}

}  // namespace phasekey
