#include "chaos/nemesis.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>
#include <string_view>

#include "chaos/services.h"

namespace ride_booking {
namespace {

using phasekey::Result;
using phasekey::Status;

constexpr NemesisKind kKinds[] = {NemesisKind::kKill, NemesisKind::kPause, NemesisKind::kDbRestart,
                                  NemesisKind::kPartition, NemesisKind::kClockJump};

bool TargetsAProcess(NemesisKind kind) { return kind == NemesisKind::kKill || kind == NemesisKind::kPause; }

// `arg` quoted for a POSIX shell unless it needs none.
std::string ShellQuoted(const std::string& arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("-_./=:,@+%").find(c) != std::string_view::npos;
  });
  if (plain) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

const char* NemesisName(NemesisKind kind) {
  switch (kind) {
    case NemesisKind::kKill: return "kill";
    case NemesisKind::kPause: return "pause";
    case NemesisKind::kDbRestart: return "db-restart";
    case NemesisKind::kPartition: return "partition";
    case NemesisKind::kClockJump: return "clock-jump";
  }
  return "?";
}

std::vector<std::string> NemesisNames() {
  std::vector<std::string> names;
  for (NemesisKind k : kKinds) names.emplace_back(NemesisName(k));
  return names;
}

Result<std::vector<NemesisKind>> ParseNemeses(const std::vector<std::string>& names) {
  std::vector<NemesisKind> kinds;
  auto add = [&kinds](NemesisKind k) {
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) kinds.push_back(k);
  };
  for (const std::string& name : names) {
    if (name == "all") {
      for (NemesisKind k : kKinds) add(k);
      continue;
    }
    const auto* it =
        std::find_if(std::begin(kKinds), std::end(kKinds), [&](NemesisKind k) { return name == NemesisName(k); });
    if (it == std::end(kKinds)) {
      return Status::InvalidArgument("unknown nemesis \"" + name +
                                     "\" (kill, pause, db-restart, partition, clock-jump or all)");
    }
    add(*it);
  }
  if (kinds.empty()) return Status::InvalidArgument("no nemesis named");
  return kinds;
}

std::vector<NemesisStep> PlanNemeses(unsigned seed, const std::vector<NemesisKind>& kinds, int count, int processes) {
  std::seed_seq seq{seed, 3u};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> when(kFirstFaultAt, kLastFaultAt);
  std::vector<NemesisStep> steps(static_cast<std::size_t>(std::max(count, 0)));
  for (NemesisStep& s : steps) s.at = when(rng);
  std::sort(steps.begin(), steps.end(), [](const NemesisStep& a, const NemesisStep& b) { return a.at < b.at; });
  // Every kind once (in an order drawn from the seed), then kinds drawn at random.
  std::vector<NemesisKind> order = kinds;
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<std::size_t> any(0, kinds.size() - 1);
  int per_process = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    steps[i].kind = i < order.size() ? order[i] : kinds[any(rng)];
    if (TargetsAProcess(steps[i].kind)) steps[i].target = per_process++ % std::max(processes, 1);
  }
  return steps;
}

std::string DescribeStep(const NemesisStep& step, const std::vector<std::string>& names) {
  char at[16];
  std::snprintf(at, sizeof at, "%.3f", step.at);
  std::string out = std::string(at) + " " + NemesisName(step.kind);
  if (TargetsAProcess(step.kind) && static_cast<std::size_t>(step.target) < names.size()) {
    out += " " + names[static_cast<std::size_t>(step.target)];
  }
  return out;
}

namespace {

std::vector<std::string> ProcessNames(const ChaosServices& services) {
  std::vector<std::string> names;
  for (const ChaosProcess& p : services.processes()) names.push_back(p.name);
  return names;
}

// Why `kind` cannot run against `services` ("" when it can).
std::string Unavailable(NemesisKind kind, const ChaosServices& services) {
  if (kind == NemesisKind::kDbRestart && !services.owns_database()) {
    return "--nemesis db-restart needs the run's own PostgreSQL: drop --database-url (and DATABASE_URL)";
  }
  if (kind == NemesisKind::kPartition) return services.PartitionUnavailable();
  return "";
}

}  // namespace

Result<std::vector<NemesisStep>> PlanRunFaults(unsigned seed, const std::vector<NemesisKind>& kinds, int count,
                                               const ChaosServices& services) {
  for (NemesisKind k : kinds) {
    if (std::string why = Unavailable(k, services); !why.empty()) return Status::FailedPrecondition(why);
  }
  std::vector<NemesisStep> schedule = PlanNemeses(seed, kinds, count, services.process_count());
  std::string line;
  for (const std::string& step : DescribeSchedule(schedule, services)) line += (line.empty() ? "" : ", ") + step;
  std::fprintf(stderr, "chaos: faults: %s\n", line.empty() ? "none" : line.c_str());
  return schedule;
}

std::vector<std::string> DescribeSchedule(const std::vector<NemesisStep>& schedule, const ChaosServices& services) {
  const std::vector<std::string> names = ProcessNames(services);
  std::vector<std::string> out;
  for (const NemesisStep& step : schedule) out.push_back(DescribeStep(step, names));
  return out;
}

Status InjectFault(const NemesisStep& step, const NemesisTimings& t, ChaosServices* services) {
  switch (step.kind) {
    case NemesisKind::kKill: return services->KillAndRestart(step.target);
    case NemesisKind::kPause: return services->Pause(step.target, t.pause);
    case NemesisKind::kDbRestart: return services->RestartDatabase();
    case NemesisKind::kPartition: return services->CutDatabaseLink(t.partition);
    case NemesisKind::kClockJump: return services->JumpClock(t.clock_offset, t.clock_jumped);
  }
  return Status::InvalidArgument("unknown nemesis");
}

std::string ReplayCommand(const std::vector<std::string>& argv, unsigned seed) {
  // Database URLs carry passwords: the command names an environment
  // variable instead, to be set to the same server.
  const std::vector<std::pair<std::string, std::string>> secret = {{"--database-url", "\"$DATABASE_URL\""},
                                                                   {"--session-url", "\"$SESSION_URL\""}};
  std::string out;
  auto add = [&out](const std::string& quoted) { out += (out.empty() ? "" : " ") + quoted; };
  bool seeded = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const auto hidden = std::find_if(secret.begin(), secret.end(),
                                     [&](const auto& s) { return a == s.first || a.rfind(s.first + "=", 0) == 0; });
    if (hidden != secret.end()) {
      add(hidden->first + " " + hidden->second);
      if (a == hidden->first) ++i;
    } else if (a == "--seed" || a.rfind("--seed=", 0) == 0) {
      add("--seed " + std::to_string(seed));
      seeded = true;
      if (a == "--seed") ++i;
    } else {
      add(ShellQuoted(a));
    }
  }
  if (!seeded) add("--seed " + std::to_string(seed));
  return out;
}

}  // namespace ride_booking
