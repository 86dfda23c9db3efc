// Which process did what in a chaos run, from what the processes and the
// database recorded: each service's and worker's request log (one JSON line
// per answered request, RunnerOptions::log_requests: the key row's id, the
// claims the key has had, the reply, the recovery point reached; 0 for the
// id of a replay or a 409), read back from its log file; the run's key rows
// (id, creation time); and when each process was SIGKILLed.
//
// Per process: the requests it answered (a worker: the keys it re-drove to
// an answer) and the keys it finished (its "completed" line; a key has at
// most one). A key is started on one process and finished on another when
// its first holder is known and is not its finisher. The first holder is
// known in two ways:
//  - it released the key: its line says "retry_later" or "internal_error"
//    at a recovery point past `started` (it committed a phase, then let go),
//    earlier than the completion;
//  - it was killed: the completion came at a later claim (attempt > 1), no
//    process released the key, so its holder died without answering, and
//    exactly one process was killed between the key row's creation and the
//    completion. With two or more such kills the key counts as taken over
//    from a killed holder that cannot be named.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PROCESSES_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PROCESSES_H_

#include <cstdio>
#include <string>
#include <vector>

#include "chaos/services.h"
#include "phasekey/status.h"

namespace ride_booking {

struct ChaosProcessRow {
  std::string name;
  bool service = false;
  int kills = 0;
  long long answered = 0;  // request lines in its log (its log holds this run only)
  long long finished = 0;  // "completed" lines for this run's keys
};

// One key finished on another process than the one that started it.
struct ChaosHandOver {
  long long key_id = 0;
  std::string key;
  std::string started_on, how;  // the first holder; "released at <point>" or "killed"
  std::string finished_on;
};

struct ChaosProcessFindings {
  std::vector<ChaosProcessRow> rows;    // in the order of ChaosServices::processes()
  long long handed_over_released = 0;   // started on one, finished on another: released
  long long handed_over_killed = 0;     // started on one, finished on another: its holder killed
  long long taken_over_unnamed = 0;     // finished after a killed holder that cannot be named
  std::vector<ChaosHandOver> examples;  // a few of each kind of hand-over
  long long finished_unattributed = 0;  // finished key rows no "completed" line names
  long long unreadable_lines = 0;       // request lines that did not parse (should be 0)

  long long handed_over() const { return handed_over_released + handed_over_killed; }
};

// Reads the run's key rows (those from the run's first key on, see
// kChaosRunKeys) and every process's log. Database and file errors are
// errors.
phasekey::Result<ChaosProcessFindings> AttributeChaosRun(const std::string& db_url, const std::string& first_key,
                                                         const std::vector<ChaosProcess>& processes);

// The per-process table, then the hand-overs with a few examples.
void PrintChaosProcesses(std::FILE* out, const ChaosProcessFindings& findings);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_PROCESSES_H_
