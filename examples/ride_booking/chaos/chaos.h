// `ride_booking chaos`: the chaos demo.
//
// Starts fake_gateway (with faults on), the service and the worker (or
// several of each, --services and --workers: the services behind a
// round-robin balancer) as child processes against one database, runs N
// simulated careful clients that each make M ride requests (one key per
// logical request, kept across retries; retry with backoff on network
// errors, 409 and 503), kills the services and workers in turn with SIGKILL
// a few times at random moments and starts each again, shows a progress bar, then checks the invariants against the
// database and the gateway's ledger and prints a report. Exit status 0 only if every invariant holds and at least one
// request was checked (a run that checked nothing fails). The report also says, per process, what it answered and
// finished, and which keys moved between processes (processes.h).
// Meanwhile an operator refunds a share of the charges at the gateway, whose
// webhook events (payment_intent.succeeded or charge.succeeded,
// charge.refunded) reach the service at least once, out of order and across
// its restarts; the
// report checks that every charge's payment state in the service ends up
// matching the gateway's ledger. As the soak (--duration-s, --crash-points), it runs for a
// time and each start of the service or the worker arms a random crash
// point, so they also die at the engine's most delicate moments.
// Every run also writes its history (history.h: every attempt, fault, key
// row and the gateway's ledger; --history), for a checker that shares no code
// with this harness (tests/history/check_history.py).
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CHAOS_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CHAOS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ride_booking {

struct ChaosFlags {
  std::string database_url;  // empty: $DATABASE_URL, else embedded in pg_dir
  std::string pg_dir = ".phasekey/chaos-pg";
  std::string bin_dir;  // where ride_booking and fake_gateway are (default: this binary's dir and ./fake_gateway/)
  int clients = 16;
  int requests = 50;  // per client
  int kills = 3;      // faults during the run (--faults, alias --kills), of the kinds in `nemeses`
  // The kinds of faults (nemesis.h): "kill", "pause", "db-restart",
  // "partition", "clock-jump", or "all". Their schedule comes from the seed.
  std::vector<std::string> nemeses = {"kill"};
  double fail_rate = 0.05;           // gateway 500 before charging
  double drop_response_rate = 0.05;  // gateway charges, then drops the response
  int latency_ms = 20;               // gateway latency before charging
  std::string provider = "stripe";   // the gateway's --dialect and the service's --provider
  unsigned seed = 0;                 // 0: from the clock; printed for replay
  int give_up_after = 8;             // attempts before a client abandons a request (left to the worker)
  double refund_share = 0.2;         // share of the charges an operator refunds at the gateway
  bool keep_logs = false;            // keep the run directory (logs, ledger) even when the run passes
  bool progress = true;              // the progress bar (off when stderr is not a TTY)
  // The soak (docs/reliability.md): bounded by time instead of a number of
  // requests, with crash points armed in the service and the worker.
  int duration_s = 0;         // > 0: clients start requests for this long (--requests ignored)
  bool crash_points = false;  // arm a random crash point in each service and worker start
  int crash_every = 100;      // the armed hit is drawn from 1..crash_every
  // "FRACTION:COMMAND": a shell command run at that fraction of the run and
  // waited for, its unavailability window reported (events.h); the
  // failover test's switchover and primary kill. None by default.
  std::vector<std::string> events;
  // Several processes (docs/scaling.md): clients reach the services through
  // a round-robin balancer, so one key's retries land on several of them.
  int services = 1;
  int workers = 1;
  // Handed to every service and worker: to run them through a
  // transaction-mode pooler (--database-url then names the pooler).
  bool prepared_statements = true;
  std::string session_url;
  // Handed to every service and worker as --kek-file: their stored bodies
  // are sealed (docs/data-protection.md). Empty: they are not.
  std::string kek_file;
  // The gateway over TLS, as deployed: fake_gateway serves https only with
  // this certificate and key, and the services, the workers and the harness
  // trust the CA. All three or none (plain HTTP).
  std::string gateway_cert, gateway_key, gateway_ca;
  // Where the run's history goes (history.h; checked by
  // tests/history/check_history.py). Empty: into the run directory's
  // history/ (kept with it).
  std::string history_dir;
  // The command line the run was started with (main's argv), for the
  // replay command a failing run prints. Empty: none printed.
  std::vector<std::string> argv;
};

void AddChaosFlags(CLI::App* cmd, ChaosFlags* flags);
int RunChaos(const ChaosFlags& flags);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_CHAOS_H_
