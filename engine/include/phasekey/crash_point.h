// Crash points: named places where a test can make the process die by
// SIGKILL, to prove that recovery works from every point (the crash matrix,
// docs/reliability.md).
//
// Compiled in only when the build defines PHASEKEY_CRASH_POINTS (the test
// build of ./run.sh test); otherwise PHASEKEY_CRASH_POINT expands to nothing
// and its argument is not even evaluated: zero cost in release builds.
//
// Armed by the environment variable PHASEKEY_CRASH_AT="<name>" (the first
// hit) or "<name>@<n>" (the n-th hit, counting from 1). The points the
// engine defines:
//   claim.before_commit, claim.after_commit       the claim's transaction
//   phase.<phase>.before_commit / .after_commit   an atomic phase's transaction
//   response.before_commit / .after_commit        the one storing the response
//   foreign.<phase>.before_call / .after_call     around a foreign phase
//   redrive.claimed                               worker: claimed, not resumed
//   enqueuer.delivered                            sink accepted, delete not committed
// phasekey_phases' Beast HTTP client (phasekey/phases/http_client.h) defines
//   foreign.sent                                  a request written, its answer not read
// Applications add their own with the same macro.
#ifndef PHASEKEY_CRASH_POINT_H_
#define PHASEKEY_CRASH_POINT_H_

#include <string_view>

namespace phasekey {

// True when this binary was built with crash points.
bool CrashPointsCompiledIn();

// What PHASEKEY_CRASH_POINT(name) calls in a build with crash points: kills
// the process with SIGKILL when `name` is the armed point and this is the
// armed hit; otherwise returns at once. Thread-safe. Call the macro rather
// than this, so that builds without crash points carry none.
void ReachCrashPoint(std::string_view name);

}  // namespace phasekey

#ifdef PHASEKEY_CRASH_POINTS
// A crash point named `name` (a std::string_view or anything converting to
// one): ReachCrashPoint(name) in a build with crash points; nothing, and
// `name` not evaluated, in one without.
#define PHASEKEY_CRASH_POINT(name) ::phasekey::ReachCrashPoint(name)
#else
#define PHASEKEY_CRASH_POINT(name) ((void)0)
#endif

#endif  // PHASEKEY_CRASH_POINT_H_
