#include "chaos/events.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "chaos/process.h"

namespace ride_booking {
namespace {

using std::chrono::milliseconds;

// How often the event thread looks at the run's progress and at a running
// command.
constexpr milliseconds kPoll{20};
// After its command ends, an event is still blamed for failures this long
// (clients back off up to 1 s, and a pool finds its dead connections only
// when it next uses them), unless the next event has started by then.
constexpr std::chrono::seconds kAftermath{10};

double Ms(ChaosClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Runs one command to its end; returns its exit status (128 + signal if
// killed by one), or -1 if it could not be started. Stops it if `stop` is set.
int RunCommand(const std::string& command, const std::atomic<bool>& stop) {
  // stdout joins stderr: nobody reads the child's stdout pipe.
  auto child = ChildProcess::Spawn({"/bin/sh", "-c", "exec 1>&2; " + command}, "/dev/stderr");
  if (!child) {
    std::fprintf(stderr, "chaos: event '%s' could not start: %s\n", command.c_str(), child.error().ToString().c_str());
    return -1;
  }
  int code = 0;
  while (!(*child)->Exited(&code)) {
    if (stop.load()) return (*child)->Stop();
    std::this_thread::sleep_for(kPoll);
  }
  return code;
}

}  // namespace

phasekey::Result<ChaosEvent> ParseChaosEvent(const std::string& spec) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos || colon + 1 >= spec.size()) {
    return phasekey::Status::InvalidArgument("event '" + spec + "': expected FRACTION:COMMAND");
  }
  ChaosEvent e;
  e.command = spec.substr(colon + 1);
  try {
    std::size_t used = 0;
    e.at = std::stod(spec.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    return phasekey::Status::InvalidArgument("event '" + spec + "': the fraction is not a number");
  }
  if (e.at < 0 || e.at >= 1) return phasekey::Status::InvalidArgument("event '" + spec + "': fraction not in [0, 1)");
  return e;
}

void ChaosAttemptLog::Record(bool failed) {
  const auto now = ChaosClock::now();
  std::lock_guard<std::mutex> lock(mu_);
  attempts_.push_back({now, failed});
}

std::vector<ChaosAttemptLog::Attempt> ChaosAttemptLog::Attempts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return attempts_;
}

std::vector<ChaosEventResult> RunChaosEvents(
    std::vector<ChaosEvent> events, const std::function<double()>& fraction, const std::atomic<bool>& stop,
    const std::function<void(const ChaosEvent&, bool ended, int exit_code)>& on_event) {
  std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
  std::vector<ChaosEventResult> results;
  for (auto& e : events) {
    ChaosEventResult r;
    r.event = e;
    results.push_back(r);
  }
  for (auto& r : results) {
    while (!stop.load() && fraction() < r.event.at) std::this_thread::sleep_for(kPoll);
    if (stop.load() || fraction() >= 1.0) break;  // the clients are done: no load left to disturb
    std::fprintf(stderr, "\nchaos: event at %.2f: %s\n", r.event.at, r.event.command.c_str());
    r.ran = true;
    r.started = ChaosClock::now();
    if (on_event) on_event(r.event, false, 0);
    r.exit_code = RunCommand(r.event.command, stop);
    r.ended = ChaosClock::now();
    if (on_event) on_event(r.event, true, r.exit_code);
  }
  return results;
}

void MeasureWindows(const std::vector<ChaosAttemptLog::Attempt>& attempts, std::vector<ChaosEventResult>* results) {
  std::vector<ChaosAttemptLog::Attempt> sorted = attempts;
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.at < b.at; });
  for (std::size_t i = 0; i < results->size(); ++i) {
    ChaosEventResult& r = (*results)[i];
    if (!r.ran) continue;
    auto span_end = r.ended + kAftermath;
    if (i + 1 < results->size() && (*results)[i + 1].ran) span_end = std::min(span_end, (*results)[i + 1].started);
    bool open = false;  // a failure since the last answer
    ChaosClock::time_point first_failure;
    long long failures = 0;
    for (const auto& a : sorted) {
      if (a.failed) {
        if (!open) first_failure = a.at;
        open = true;
        ++failures;
        continue;
      }
      if (open && a.at >= r.started && first_failure <= span_end &&
          (!r.has_window || a.at - first_failure > r.window_end - r.window_start)) {
        r.has_window = true;
        r.window_start = first_failure;
        r.window_end = a.at;
        r.failed_in_window = failures;
      }
      open = false;
      failures = 0;
    }
  }
}

bool PrintChaosEvents(std::FILE* out, const std::vector<ChaosEventResult>& results, ChaosClock::time_point run_start) {
  bool ok = true;
  for (const auto& r : results) {
    if (!r.ran) {
      std::fprintf(out, "event %-40s did not run: the run ended first\n", r.event.command.c_str());
      ok = false;
      continue;
    }
    std::fprintf(out, "event %-40s at %6.1f s: command took %.1f s, exit %d; ", r.event.command.c_str(),
                 Ms(r.started - run_start) / 1000, Ms(r.ended - r.started) / 1000, r.exit_code);
    if (r.has_window) {
      std::fprintf(out, "unavailable %.0f ms (from +%.0f ms to +%.0f ms), %lld failed attempts\n",
                   Ms(r.window_end - r.window_start), Ms(r.window_start - r.started), Ms(r.window_end - r.started),
                   r.failed_in_window);
    } else {
      std::fprintf(out, "no failed attempt around it\n");
    }
    if (r.exit_code != 0) ok = false;
  }
  std::fprintf(out, "chaos: events: %s\n", ok ? "every event ran and succeeded" : "FAIL: an event failed or never ran");
  return ok;
}

}  // namespace ride_booking
