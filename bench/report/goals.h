// The speed goals of docs/benchmarks.md, each said once here and checked by
// the section that measures it; "Goals at a glance" lists every one with
// this run's figure, whether it was met, and, when it was not, what limits
// it (from the same run's counters) and the section with the detail.
#ifndef PHASEKEY_BENCH_REPORT_GOALS_H_
#define PHASEKEY_BENCH_REPORT_GOALS_H_

#include <optional>
#include <string>
#include <vector>

namespace phasekey::bench::report {

// phasekey / raw_two_commits rides per second, at every client count.
inline constexpr double kRawRpsGoal = 0.85;
// phasekey / the pgbench floor rides per second, at every client count.
inline constexpr double kFloorRpsGoal = 0.7;
// WAL bytes and client CPU per ride, phasekey / raw, at 16 clients.
inline constexpr double kWalGoal = 1.5;
inline constexpr double kClientCpuGoal = 1.3;
// The ride flow with bodies sealed at rest / the plaintext ride, rides per
// second at 16 clients: encryption costs under 5%.
inline constexpr double kSealedGoal = 0.95;
// The service over HTTP / the in-process flow, rides per second at 16.
inline constexpr double kHttpGoal = 0.7;
// The deployed shape at 16 connections (issue 34): the service's CPU per
// ride with its provider over TLS / over plain HTTP, both with the pool;
// p50 over TLS with the pool minus the gateway's latency, in ms; and the
// service's CPU per ride over HTTP / the engine's client CPU in process.
inline constexpr double kTlsCpuGoal = 1.2;
inline constexpr double kDeployedP50SlackMs = 3;
inline constexpr double kFrontCpuGoal = 1.3;
// phasekey's loser p99 / a bare SELECT 1's p99 under the same burst, N=64.
inline constexpr double kLoserGoal = 1.5;
// The one-phase record flow / raw INSERT ... ON CONFLICT at 16 connections.
inline constexpr double kRecordGoal = 0.6;
// A 1 KiB body's fingerprint: microseconds, and times nlohmann parse+dump.
inline constexpr double kFingerprintMicrosGoal = 10;
inline constexpr double kFingerprintRatioGoal = 1.0;
// A replay's p50 / a bare primary-key SELECT's p50 of the same row.
inline constexpr double kReplayGoal = 1.2;
// phasekey / DBOS Transact rides per second.
inline constexpr double kPeerGoal = 10;

struct GoalRow {
  std::string figure;    // what is measured
  std::string goal;      // the target, in words
  std::string measured;  // this run's figure(s); empty when not measured
  std::optional<bool> met;
  std::string limit;    // when missed: what limits it, from this run's counters
  std::string section;  // the section's title, for its anchor
};

// Filled by the sections while they render (one thread), read once.
class Goals {
 public:
  void Add(GoalRow row) { rows_.push_back(std::move(row)); }
  // The "Goals at a glance" section.
  std::string Render() const;

 private:
  std::vector<GoalRow> rows_;
};

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_GOALS_H_
