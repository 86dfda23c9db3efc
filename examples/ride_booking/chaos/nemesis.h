// The faults of a chaos run ("nemeses", after Jepsen), and their schedule.
//
// A run injects --faults faults, each of a kind drawn from the --nemesis
// list, at moments drawn from the run's seed: the same seed and flags give
// the same schedule (the moments are fractions of the run, so the faults
// land at the same point of the work, not of the wall clock). The kinds:
//   kill        SIGKILL a service or worker, then start it again at once
//   pause       SIGSTOP a service or worker past its lease, then SIGCONT:
//               its keys are taken over meanwhile, and everything it tries
//               to write when it wakes must be fenced out
//   db-restart  PostgreSQL stopped in immediate mode (no checkpoint: crash
//               recovery at the next start) and started again
//   partition   every packet between the processes and PostgreSQL dropped
//               (iptables) for a few seconds, then let through again
//   clock-jump  the wall clock of every service and worker jumped an hour
//               forward (libfaketime), then back: the database's clock
//               alone must decide leases
// Kills and pauses take the processes in turn (services first, then
// workers), so with as many of them as processes each one is hit.
// db-restart and partition need the run's own embedded server (a shared
// server's other users would suffer too); partition needs root and iptables.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_NEMESIS_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_NEMESIS_H_

#include <chrono>
#include <string>
#include <vector>

#include "phasekey/status.h"

namespace ride_booking {

class ChaosServices;

enum class NemesisKind { kKill, kPause, kDbRestart, kPartition, kClockJump };

// "kill", "pause", "db-restart", "partition", "clock-jump".
const char* NemesisName(NemesisKind kind);
// Every kind's name, in the order above.
std::vector<std::string> NemesisNames();
// Parses a comma-separated list of names ("all": every kind); repeats are
// dropped. InvalidArgument naming the unknown one.
phasekey::Result<std::vector<NemesisKind>> ParseNemeses(const std::vector<std::string>& names);

// One fault of the schedule.
struct NemesisStep {
  double at = 0;  // fraction of the run, in [kFirstFaultAt, kLastFaultAt]
  NemesisKind kind = NemesisKind::kKill;
  int target = 0;  // kill, pause: the process (services first, then workers); else 0
};

// Faults fall between these fractions of the run, so each one hits a busy
// run rather than one still starting or nearly idle.
inline constexpr double kFirstFaultAt = 0.1;
inline constexpr double kLastFaultAt = 0.75;

// The schedule of `count` faults of `kinds` (not empty) among `processes`
// services and workers, drawn from `seed`: sorted by moment; when count is
// at least the number of kinds, each kind occurs.
std::vector<NemesisStep> PlanNemeses(unsigned seed, const std::vector<NemesisKind>& kinds, int count, int processes);

// The run's schedule (PlanNemeses over its processes), checked against what
// `services` can do (an error names the nemesis that cannot run here and
// why), and printed on stderr in one line.
phasekey::Result<std::vector<NemesisStep>> PlanRunFaults(unsigned seed, const std::vector<NemesisKind>& kinds,
                                                         int count, const ChaosServices& services);
// Each step described (DescribeStep) with the run's process names.
std::vector<std::string> DescribeSchedule(const std::vector<NemesisStep>& schedule, const ChaosServices& services);

// "0.142 pause service-2" (the process named by `names`, indexed by target).
std::string DescribeStep(const NemesisStep& step, const std::vector<std::string>& names);

// How long the faults that last last.
struct NemesisTimings {
  std::chrono::milliseconds pause{5000};      // past the demo's 3 s lease
  std::chrono::milliseconds partition{4000};  // past the lease, shorter than the client's patience
  std::chrono::seconds clock_offset{3600};    // how far the clock jumps forward
  std::chrono::milliseconds clock_jumped{3000};
};

// Injects `step` into the run, blocking until it is over (a pause: until
// the process was continued). Every fault is told to the history as it
// starts and ends (ChaosServicesOptions::on_fault). An error fails the run.
phasekey::Status InjectFault(const NemesisStep& step, const NemesisTimings& timings, ChaosServices* services);

// The command that replays a run: `argv` (as the run was started) with
// --seed set to `seed`, each argument quoted for a POSIX shell when needed.
// A --database-url or --session-url is shown as "$DATABASE_URL" or
// "$SESSION_URL" (they carry passwords): set them to the same servers.
std::string ReplayCommand(const std::vector<std::string>& argv, unsigned seed);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_NEMESIS_H_
