#include "chaos/chaos.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <iterator>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chaos/client.h"
#include "chaos/events.h"
#include "chaos/history.h"
#include "chaos/interrupt_watcher.h"
#include "chaos/nemesis.h"
#include "chaos/payments.h"
#include "chaos/processes.h"
#include "chaos/report.h"
#include "chaos/services.h"
#include "phasekey/tools/stop_signals.h"
#include "ride_charger.h"

namespace ride_booking {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the killer looks at the progress: well under one request's time.
constexpr milliseconds kKillerPoll{5};
// How far past a kill's moment the clients may run before they wait for it:
// a kill (and the restart it waits for) can take longer than the rest of a
// short run, and a kill made after the clients finished tests nothing.
constexpr double kKillHoldSlack = 0.05;
// How long the worker gets to finish the requests the clients gave up.
constexpr milliseconds kSettleTimeout{60000};
// How long the gateway's webhook deliveries may go without progress after
// the run before the mismatches left count as violations (its sender backs
// off to 2 s between attempts at a down service); a backlog that still drains
// is waited for.
constexpr milliseconds kWebhookDrainStall{60000};
// A run bounded by time: no client makes more requests than this.
constexpr int kMaxRequestsPerClient = 1000000;
// Without a terminal, a progress line this often.
constexpr std::chrono::seconds kProgressLineEvery{5};
constexpr int kBarWidth = 30;
// The exit status of a run stopped by SIGINT or SIGTERM (128 + SIGINT).
constexpr int kInterrupted = 130;

// What the run's threads share.
struct RunState {
  ChaosCounters counters;
  std::atomic<long long> restarts{0};     // kills made
  std::atomic<long long> faults{0};       // faults injected, kills included
  std::atomic<bool> stop_clients{false};  // a restart failed, or a stop signal came: end early
  std::mutex mu;
  std::condition_variable cv;
  bool clients_done = false;                    // GUARDED_BY(mu)
  std::string restart_error;                    // GUARDED_BY(mu)
  std::vector<ChaosEvent> events;               // to run (--event)
  ChaosAttemptLog attempts;                     // every client attempt, when there are events
  std::unique_ptr<ChaosHistory> history;        // set before the clients start, then only read
  std::vector<ChaosEventResult> event_results;  // written by the events thread, read after it is joined

  // Requests done at which clients stop starting new ones until the killer
  // raises it (after its next kill); no hold at its maximum.
  std::atomic<long long> kill_hold{std::numeric_limits<long long>::max()};

  // Waits up to `d`; true if the clients are done by then.
  bool WaitDone(milliseconds d) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, d, [this] { return clients_done; });
  }

  // Called by a client before each request: waits while the run has done
  // as many requests as the kill hold allows (or until the run stops).
  void AwaitKillHold() const {
    while (!stop_clients.load() && counters.done.load() >= kill_hold.load()) std::this_thread::sleep_for(kKillerPoll);
  }
};

unsigned SeedOrClock(unsigned seed) {
  if (seed != 0) return seed;
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  return static_cast<unsigned>(now ^ (now >> 32)) | 1u;
}

// Unique across runs on one database, even with the same seed.
std::string RunId(unsigned seed) {
  const auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  char hex[32];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(ms));
  return "chaos-" + std::to_string(seed) + "-" + hex;
}

// How far the run is, from 0 to 1: by requests done, or by time in a run
// bounded by time.
class RunProgress {
 public:
  RunProgress(long long total, Clock::time_point start, int duration_s)
      : total_(total), start_(start), duration_s_(duration_s) {}
  double Fraction(const RunState& st) const {
    if (duration_s_ > 0) {
      return std::chrono::duration<double>(Clock::now() - start_).count() / duration_s_;
    }
    return total_ > 0 ? static_cast<double>(st.counters.done.load()) / static_cast<double>(total_) : 1.0;
  }
  bool bounded_by_time() const { return duration_s_ > 0; }
  int duration_s() const { return duration_s_; }
  long long total() const { return total_; }

 private:
  long long total_;
  Clock::time_point start_;
  int duration_s_;
};

// Injects the schedule's faults (nemesis.h) at their moments of the run.
// In a run bounded by requests the clients are held back a little past each
// fault's moment until it is made, and while one is made they go on only
// up to the next one's, so every fault lands while requests are in flight.
// Returns when the faults are done, the clients are, or a fault failed (the
// run then stops); the hold is released then.
void InjectFaults(const std::vector<NemesisStep>& schedule, const RunProgress& progress, ChaosServices* services,
                  RunState* st) {
  struct ReleaseHold {
    RunState* st;
    ~ReleaseHold() { st->kill_hold.store(std::numeric_limits<long long>::max()); }
  } release{st};
  auto hold_at = [&](std::size_t k) {
    if (progress.bounded_by_time()) return;
    st->kill_hold.store(k < schedule.size()
                            ? static_cast<long long>(std::ceil((schedule[k].at + kKillHoldSlack) * progress.total()))
                            : std::numeric_limits<long long>::max());
  };
  hold_at(0);
  for (std::size_t k = 0; k < schedule.size(); ++k) {
    const NemesisStep& step = schedule[k];
    do {
      if (st->WaitDone(kKillerPoll)) return;  // no faults once the clients are done
    } while (progress.Fraction(*st) < step.at);
    hold_at(k + 1);
    if (phasekey::Status s = InjectFault(step, NemesisTimings{}, services); !s.ok()) {
      std::lock_guard<std::mutex> lock(st->mu);
      st->restart_error = std::string(NemesisName(step.kind)) + ": " + s.ToString();
      st->stop_clients = true;
      return;
    }
    if (step.kind == NemesisKind::kKill) st->restarts.fetch_add(1);
    st->faults.fetch_add(1);
  }
}

void PrintProgress(const RunState& st, const RunProgress& progress, bool bar) {
  const auto& c = st.counters;
  const long long done = c.done.load();
  const long long faults = c.unavailable.load() + c.internal_errors.load() + c.network_errors.load();
  char of[32] = "";
  if (!progress.bounded_by_time()) std::snprintf(of, sizeof of, "/%lld", progress.total());
  char stats[160];
  std::snprintf(stats, sizeof stats, "%lld%s requests  retries %lld  409s %lld  faults %lld  restarts %lld", done, of,
                c.retries.load(), c.conflicts.load(), faults, st.restarts.load());
  if (!bar) {
    std::fprintf(stderr, "chaos: %s\n", stats);
    return;
  }
  const int filled = static_cast<int>(std::clamp(progress.Fraction(st), 0.0, 1.0) * kBarWidth);
  std::string cells(static_cast<std::size_t>(filled), '#');
  cells.resize(kBarWidth, '-');
  std::fprintf(stderr, "\r[%s] %s ", cells.c_str(), stats);
}

// Draws the progress bar (or a line now and then) until the clients are done.
void ProgressLoop(bool bar, RunProgress progress, RunState* st) {
  auto last_line = Clock::now();
  for (;;) {
    const bool done = st->WaitDone(milliseconds(bar ? 100 : 250));
    if (bar || done || Clock::now() - last_line >= kProgressLineEvery) {
      PrintProgress(*st, progress, bar);
      last_line = Clock::now();
    }
    if (done) break;
  }
  if (bar) std::fprintf(stderr, "\n");
}

// Runs the clients, the killer and the progress bar; returns every client's
// records. The services keep running: the webhook deliveries still pending
// (and those of charges the workers make now) need them.
std::vector<ChaosRequestRecord> RunClients(const ChaosFlags& f, unsigned seed, const std::string& run_id,
                                           const std::vector<NemesisStep>& schedule, ChaosServices* services,
                                           RunState* st) {
  const auto start = Clock::now();
  const RunProgress progress(static_cast<long long>(f.clients) * f.requests, start, f.duration_s);
  std::vector<std::vector<ChaosRequestRecord>> per_client(static_cast<std::size_t>(f.clients));
  std::vector<std::thread> clients;
  for (int i = 0; i < f.clients; ++i) {
    ChaosClientOptions o;
    o.port = services->service_port();
    o.run_id = run_id;
    o.client = i;
    o.requests = f.duration_s > 0 ? kMaxRequestsPerClient : f.requests;
    if (f.duration_s > 0) o.stop_starting_at = start + std::chrono::seconds(f.duration_s);
    o.give_up_after = f.give_up_after;
    o.seed = seed;
    o.stop = &st->stop_clients;
    if (!st->events.empty()) o.attempts = &st->attempts;
    o.history = st->history.get();
    o.before_request = [st] { st->AwaitKillHold(); };
    clients.emplace_back(
        [o, st, out = &per_client[static_cast<std::size_t>(i)]] { *out = RunChaosClient(o, &st->counters); });
  }
  ChaosRefunder refunder(services->gateway_port(), services->gateway_ca(), services->provider_secret(), f.refund_share,
                         seed);
  std::thread killer(InjectFaults, schedule, progress, services, st);
  std::thread progress_bar(ProgressLoop, f.progress && ::isatty(STDERR_FILENO) == 1, progress, st);
  std::thread events([st, progress] {
    st->event_results = RunChaosEvents(
        st->events, [&] { return progress.Fraction(*st); }, st->stop_clients,
        [st](const ChaosEvent& e, bool ended, int code) {
          st->history->Fault(ended ? "event-end" : "event", "command",
                             ended ? "exit code " + std::to_string(code) : e.command);
        });
  });
  for (auto& t : clients) t.join();
  events.join();  // a command still running is waited for: it may be restoring the database
  refunder.Stop();
  services->DisarmCrashPoints();  // the worker finishes the rest without new crashes
  {
    std::lock_guard<std::mutex> lock(st->mu);
    st->clients_done = true;
  }
  st->cv.notify_all();
  progress_bar.join();
  killer.join();
  std::vector<ChaosRequestRecord> all;
  for (auto& v : per_client) std::move(v.begin(), v.end(), std::back_inserter(all));
  return all;
}

int Fail(const phasekey::Status& s) {
  std::fprintf(stderr, "chaos: %s\n", s.ToString().c_str());
  return 1;
}

// The webhook invariant, added to `findings`: waits for the deliveries to
// converge, then every mismatch left is a violation.
phasekey::Status CheckPaymentStates(const ChaosServices& services, const std::string& ledger, ChaosFindings* findings) {
  auto check = WaitForPaymentStates(services.database_url(), ledger, kWebhookDrainStall);
  if (!check) return check.error();
  findings->payments_checked = true;
  findings->payments_matched = check->matched;
  findings->refunds = check->refunded;
  findings->payments_drained_s = check->waited_s;
  for (auto& m : check->mismatches) findings->violations.push_back(std::move(m));
  return phasekey::Status::OK();
}

// Waits for the worker, checks the invariants and prints the report.
// Returns the exit status (kInterrupted if stopped by a signal meanwhile).
int Finish(const ChaosFlags& f, unsigned seed, const std::string& run_id, const std::string& first_key,
           ChaosServices* services, const RunState& st, const std::vector<ChaosRequestRecord>& records,
           Clock::time_point start) {
  const bool tty = f.progress && ::isatty(STDERR_FILENO) == 1;
  bool waited = false;
  auto on_poll = [tty, &waited, &st](long long active) {
    if (active > 0 && (tty || !waited)) {  // without a terminal, say it once
      std::fprintf(stderr, "%schaos: waiting for the worker: %lld keys unfinished%s", tty ? "\r" : "", active,
                   tty ? " " : "\n");
      waited = true;
    }
    return !st.stop_clients.load();
  };
  auto left = WaitForRunKeys(services->database_url(), first_key, kSettleTimeout, on_poll);
  if (tty && waited) std::fprintf(stderr, "\n");
  if (!left) return Fail(left.error());
  if (st.stop_clients.load()) return kInterrupted;
  auto ledger = services->Ledger();
  if (!ledger) return Fail(ledger.error());
  if (phasekey::Status s = st.history->Finish(services->database_url(), first_key, !f.kek_file.empty(), *ledger,
                                              services->gateway_dir());
      !s.ok()) {
    return Fail(s);
  }
  const RideCharger charger(f.provider, "http://127.0.0.1:1", std::chrono::seconds(1));  // for its keys only
  auto findings = CheckChaosRun(
      services->database_url(), first_key, records, *ledger,
      [&charger](const std::string& provider_key) { return charger.LedgerKeyFor(provider_key); },
      phasekey::EncryptionOptions{f.kek_file, "", std::chrono::seconds(60)});
  if (!findings) return Fail(findings.error());
  if (phasekey::Status s = CheckPaymentStates(*services, *ledger, &*findings); !s.ok()) return Fail(s);
  const auto& c = st.counters;
  ChaosTotals t;
  t.seed = seed;
  t.run_id = run_id;
  t.gateway = services->GatewayUrl();
  t.clients = f.clients;
  t.requests_per_client = f.duration_s > 0 ? 0 : f.requests;
  t.duration_s = f.duration_s;
  t.requests = static_cast<long long>(records.size());
  t.retries = c.retries.load();
  t.conflicts = c.conflicts.load();
  t.unavailable = c.unavailable.load();
  t.internal_errors = c.internal_errors.load();
  t.network_errors = c.network_errors.load();
  t.replays = c.replays.load();
  t.abandoned = c.abandoned.load();
  t.restarts = st.restarts.load();
  t.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  t.crash_points = f.crash_points;
  for (const CrashDeath& d : services->crash_deaths()) {
    if (d.AtCrashPoint()) {
      ++t.crash_deaths[d.process + " at " + d.armed.substr(0, d.armed.find('@'))];
    } else {
      t.unexpected_deaths.push_back("the " + d.process + " died unexpectedly (exit code " +
                                    std::to_string(d.exit_code) + (d.armed.empty() ? "" : ", armed " + d.armed) +
                                    "; see " + d.process + ".log)");
    }
  }
  auto by_process = AttributeChaosRun(services->database_url(), first_key, services->processes());
  if (!by_process) return Fail(by_process.error());
  PrintChaosProcesses(stdout, *by_process);
  PrintChaosReport(stdout, t, *findings);
  bool events_ok = true;
  if (!st.events.empty()) {
    std::vector<ChaosEventResult> results = st.event_results;
    MeasureWindows(st.attempts.Attempts(), &results);
    events_ok = PrintChaosEvents(stdout, results, start);
  }
  if (f.keep_logs) {
    services->KeepRunDir();
    std::fprintf(stderr, "chaos: logs and the gateway's ledger kept in %s\n", services->run_dir().c_str());
  }
  if (ChaosFailures(t, *findings).empty() && events_ok) return 0;
  services->KeepRunDir();
  std::fprintf(stderr, "chaos: logs and the gateway's ledger kept in %s\n", services->run_dir().c_str());
  return 1;
}

void PrintReplay(const ChaosFlags& f, unsigned seed) {
  if (f.argv.empty()) return;
  std::fprintf(stderr, "chaos: replay this run's faults with: %s\n", ReplayCommand(f.argv, seed).c_str());
}

}  // namespace

void AddChaosFlags(CLI::App* cmd, ChaosFlags* f) {
  cmd->add_option("--database-url", f->database_url, "PostgreSQL URL (default: $DATABASE_URL, else embedded)");
  cmd->add_option("--pg-dir", f->pg_dir, "directory of the embedded PostgreSQL")->capture_default_str();
  cmd->add_option("--bin-dir", f->bin_dir, "where ride_booking and fake_gateway are (default: beside this binary)");
  cmd->add_option("--clients", f->clients, "simulated clients")->capture_default_str()->check(CLI::Range(1, 256));
  cmd->add_option("--requests", f->requests, "logical requests per client")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--faults,--kills", f->kills,
                  "faults during the run, of the --nemesis kinds; kills and pauses take each service in turn, then "
                  "each worker")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--nemesis", f->nemeses,
                  "kinds of faults, comma-separated: kill, pause, db-restart, partition, clock-jump, all "
                  "(their schedule comes from --seed)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--fail-rate", f->fail_rate, "gateway: probability of a 500 before charging")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--drop-response-rate", f->drop_response_rate,
                  "gateway: probability of charging, then dropping the response")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--latency-ms", f->latency_ms, "gateway: latency before each charge")
      ->capture_default_str()
      ->check(CLI::Range(0, 60000));
  cmd->add_option("--provider", f->provider, "payment provider: fake_gateway --dialect, ride_booking --provider")
      ->capture_default_str()
      ->check(CLI::IsMember(ProviderNames()));
  cmd->add_option("--seed", f->seed, "seed of every random choice (0: from the clock; printed)")->capture_default_str();
  cmd->add_option("--give-up-after", f->give_up_after, "attempts before a client leaves a request to the worker")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--refund-share", f->refund_share, "share of the charges an operator refunds at the gateway")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--services", f->services, "`ride_booking serve` processes (several: behind a round-robin balancer)")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd->add_option("--workers", f->workers, "`ride_booking worker` processes")
      ->capture_default_str()
      ->check(CLI::Range(1, 16));
  cmd->add_flag("--prepared-statements,!--no-prepared-statements", f->prepared_statements,
                "services and workers prepare their statements (off through a transaction-mode pooler)");
  cmd->add_option("--session-url", f->session_url,
                  "the workers' direct URL for LISTEN when --database-url goes through a pooler");
  cmd->add_option("--kek-file", f->kek_file,
                  "key-encryption keys handed to every service and worker (their --kek-file), so stored bodies "
                  "are sealed; ./run.sh demo passes one");
  auto* cert = cmd->add_option("--gateway-cert", f->gateway_cert,
                               "PEM certificate for fake_gateway to serve https only with (the deployed shape); "
                               "needs --gateway-key and --gateway-ca")
                   ->check(CLI::ExistingFile);
  auto* key =
      cmd->add_option("--gateway-key", f->gateway_key, "PEM private key of --gateway-cert")->check(CLI::ExistingFile);
  auto* ca = cmd->add_option("--gateway-ca", f->gateway_ca,
                             "PEM CA that signed --gateway-cert, trusted by the services, the workers and the "
                             "harness (their --provider-ca-file)")
                 ->check(CLI::ExistingFile);
  cert->needs(key)->needs(ca);
  key->needs(cert);
  ca->needs(cert);
  cmd->add_option("--history", f->history_dir,
                  "write the run's history (every attempt, fault, key row and the gateway's ledger) here "
                  "(default: the run directory's history/)");
  cmd->add_flag("--keep-logs", f->keep_logs, "keep the run's directory (every process's log, the ledger) after a pass");
  cmd->add_flag("--progress,!--no-progress", f->progress, "show the progress bar (only on a terminal)");
  cmd->add_option("--duration-s", f->duration_s, "run for this many seconds instead of --requests (the soak)")
      ->capture_default_str()
      ->check(CLI::Range(0, 7 * 24 * 3600));
  cmd->add_flag("--crash-points", f->crash_points,
                "arm a random crash point in every start of the service and the worker (a build with crash points)");
  cmd->add_option("--crash-every", f->crash_every, "with --crash-points: the armed hit is drawn from 1..N")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--event", f->events,
                  "FRACTION:COMMAND: run a shell command at that fraction of the run and report the "
                  "unavailability it caused (repeatable)");
}

int RunChaos(const ChaosFlags& flags) {
  const auto start = Clock::now();
  const unsigned seed = SeedOrClock(flags.seed);
  const std::string run_id = RunId(seed);
  const std::string first_key = ChaosFirstKey(std::chrono::system_clock::now());  // before any client starts
  auto kinds = ParseNemeses(flags.nemeses);
  if (!kinds) return Fail(kinds.error());
  if (flags.duration_s > 0) {
    std::fprintf(stderr, "chaos: seed %u, run %s: %d clients for %d s, %d faults%s\n", seed, run_id.c_str(),
                 flags.clients, flags.duration_s, flags.kills, flags.crash_points ? ", crash points armed" : "");
  } else {
    std::fprintf(stderr, "chaos: seed %u, run %s: %d clients x %d requests, %d faults%s\n", seed, run_id.c_str(),
                 flags.clients, flags.requests, flags.kills, flags.crash_points ? ", crash points armed" : "");
  }
  if (flags.services > 1 || flags.workers > 1) {
    std::fprintf(stderr, "chaos: %d services behind a balancer, %d workers\n", flags.services, flags.workers);
  }
  ChaosServicesOptions so;
  so.database_url = flags.database_url;
  so.pg_dir = flags.pg_dir;
  so.bin_dir = flags.bin_dir;
  so.fail_rate = flags.fail_rate;
  so.drop_response_rate = flags.drop_response_rate;
  so.latency_ms = flags.latency_ms;
  so.seed = seed;
  so.provider = flags.provider;
  so.crash_points = flags.crash_points;
  so.crash_every = flags.crash_every;
  so.services = flags.services;
  so.workers = flags.workers;
  so.prepared_statements = flags.prepared_statements;
  so.session_url = flags.session_url;
  so.kek_file = flags.kek_file;
  so.gateway_cert = flags.gateway_cert;
  so.gateway_key = flags.gateway_key;
  so.gateway_ca = flags.gateway_ca;
  so.fake_clock = std::find(kinds->begin(), kinds->end(), NemesisKind::kClockJump) != kinds->end();
  RunState st;
  so.on_fault = [&st](const std::string& kind, const std::string& process, const std::string& detail) {
    if (st.history) st.history->Fault(kind, process, detail);
  };
  auto services = ChaosServices::Start(so);
  if (!services) return Fail(services.error());
  auto schedule = PlanRunFaults(seed, *kinds, flags.kills, **services);
  if (!schedule) return Fail(schedule.error());
  auto history =
      ChaosHistory::Open(flags.history_dir.empty() ? (*services)->run_dir() + "/history" : flags.history_dir);
  if (!history) return Fail(history.error());
  st.history = std::move(*history);
  st.history->Write({{"type", "run"},
                     {"run_id", run_id},
                     {"seed", seed},
                     {"first_key", first_key},
                     {"clients", flags.clients},
                     {"services", flags.services},
                     {"workers", flags.workers},
                     {"provider", flags.provider},
                     {"kills", flags.kills},
                     {"lease_ms", kChaosLeaseSeconds * 1000},
                     {"nemeses", flags.nemeses},
                     {"schedule", DescribeSchedule(*schedule, **services)},
                     {"crash_points", flags.crash_points},
                     {"planted_bug", ChaosPlantedBug()},
                     {"at_ms", ChaosHistoryNowMs()}});
  for (const std::string& spec : flags.events) {
    auto e = ParseChaosEvent(spec);
    if (!e) return Fail(e.error());
    st.events.push_back(*e);
  }
  InterruptWatcher interrupts(&st.stop_clients);
  const std::vector<ChaosRequestRecord> records = RunClients(flags, seed, run_id, *schedule, services->get(), &st);
  if (interrupts.interrupted()) return kInterrupted;  // the services stop on the way out
  if (!st.restart_error.empty()) {
    (*services)->KeepRunDir();
    std::fprintf(stderr, "chaos: FAIL: a fault could not be made or undone: %s (logs in %s)\n",
                 st.restart_error.c_str(), (*services)->run_dir().c_str());
    PrintReplay(flags, seed);
    return 1;
  }
  const int code = Finish(flags, seed, run_id, first_key, services->get(), st, records, start);
  if (code != 0 && !interrupts.interrupted()) PrintReplay(flags, seed);
  return interrupts.interrupted() ? kInterrupted : code;
}

}  // namespace ride_booking
