// Planted bugs: deliberate mistakes a test build can switch on, to show that
// the chaos history's checker catches them (tests/history/; docs/reliability.md,
// "The history and its checker"). A checker that passes every planted bug
// is itself broken.
//
// Compiled in only with PHASEKEY_CRASH_POINTS, as the crash points are
// (phasekey/crash_point.h): in any other build PlantedBug() is a constant
// false and the bugs' branches are dead code. Switched on by the
// environment variable PHASEKEY_PLANTED_BUG="<name>", read once:
//   replay_reruns          a replay of a finished key runs the flow again
//                          (under a derived key) instead of answering the
//                          stored response
//   new_provider_key       a retry (a later claim of the key, or the phase
//                          run again in the same process) calls the
//                          provider under a new provider key
//   finish_drops_response  the finish stores an empty response body
//   no_fencing             every fenced write of a key (move, finish,
//                          release, lease renewal) first seizes the row
//                          for its caller, so a holder that lost its lease
//                          (paused past it) still writes over the work of
//                          the one that took the key over
#ifndef PHASEKEY_SRC_UTIL_PLANTED_BUG_H_
#define PHASEKEY_SRC_UTIL_PLANTED_BUG_H_

#include <string>
#include <string_view>

namespace phasekey {

#ifdef PHASEKEY_CRASH_POINTS
// True when `name` is the planted bug this process runs with.
bool PlantedBug(std::string_view name);
// How many times this process called it with `id` before (0 the first
// time). Thread-safe. For bugs that act on a repetition.
int PlantedBugRepeats(const std::string& id);
#else
constexpr bool PlantedBug(std::string_view) { return false; }
inline int PlantedBugRepeats(const std::string&) { return 0; }
#endif

}  // namespace phasekey

#endif  // PHASEKEY_SRC_UTIL_PLANTED_BUG_H_
