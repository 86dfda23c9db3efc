// ChaosServices: everything a chaos run talks to, started and stopped as a
// unit: the database (a URL, or an embedded server), fake_gateway with its
// faults and a fresh ledger, one or more `ride_booking serve` processes (in
// front of several, a ChaosBalancer: balancer.h) and one or more
// `ride_booking worker` processes. The gateway delivers its webhook events
// (payment_intent.succeeded or charge.succeeded, charge.refunded) to POST
// /webhooks/gateway (of the service, or the balancer), signed with a secret
// fresh per run; every service's port is chosen before the gateway starts,
// and kept across restarts, so deliveries meet a killed service and then a
// new one.
// Their stderr goes to log files in a fresh run directory under the system
// temp directory (gateway.log; service.log and worker.log, or service-1.log,
// worker-1.log, ... when there are several; the gateway's ledger in
// gateway/), removed at the end unless KeepRunDir() was called.
//
// Children are tied to the thread that spawned them (see process.h):
// create the object on a thread that outlives it. Restarts after a kill are
// spawned on a thread of the object's own, so KillAndRestart may be called
// from any thread.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_SERVICES_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_SERVICES_H_

#include <atomic>
#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chaos/balancer.h"
#include "chaos/process.h"
#include "phasekey/status.h"
#include "phasekey/tools/embedded_postgres.h"

namespace ride_booking {

class SpawnThread;  // services.cc

// The lease every service and worker runs with (--lease-seconds): short,
// so that a key left behind by a killed or paused process is taken over
// within seconds.
inline constexpr int kChaosLeaseSeconds = 3;

struct ChaosServicesOptions {
  std::string database_url;  // empty: $DATABASE_URL, else an embedded server in pg_dir
  std::string pg_dir;
  std::string bin_dir;   // empty: the directory of this executable
  double fail_rate = 0;  // the gateway's faults
  double drop_response_rate = 0;
  int latency_ms = 0;
  unsigned seed = 0;                // the gateway's fault dice
  std::string provider = "stripe";  // the gateway's --dialect, the service's and worker's --provider
  // The soak: each start of the service and of the worker arms one crash
  // point (phasekey/crash_point.h) drawn from the ride flow's, at a hit drawn
  // from 1..crash_every; a child that dies is started again at once (with a
  // new point). Needs a build with crash points (refused otherwise).
  bool crash_points = false;
  int crash_every = 100;
  int services = 1;  // `ride_booking serve` processes; more than one: behind a ChaosBalancer
  int workers = 1;   // `ride_booking worker` processes
  // Passed to every service and worker (--no-prepared-statements,
  // --session-url): to run them through a transaction-mode pooler.
  bool prepared_statements = true;
  std::string session_url;
  // Passed to every service and worker as --kek-file when set.
  std::string kek_file;
  // All three set: the gateway serves https only with cert and key, and
  // the services, the workers (--provider-ca-file) and Ledger() trust ca.
  std::string gateway_cert, gateway_key, gateway_ca;
  // Told of every kill, death and restart of a service or worker, as it
  // happens ("kill", "died", "restart"; the process's name; a detail such
  // as the exit code or the armed crash point), for the run's history
  // (history.h). Called with the object's lock held: it must not call
  // back. Empty: nobody is told.
  std::function<void(const std::string& kind, const std::string& process, const std::string& detail)> on_fault;
  // Start every service and worker under libfaketime (Debian's faketime), so
  // that JumpClock can move their wall clocks. Refused when it is missing.
  bool fake_clock = false;
};

// A service or worker process of the run, as the report names it.
struct ChaosProcess {
  std::string name;      // "service", "worker"; "service-2", "worker-1" when there are several
  std::string log_path;  // its stderr, every incarnation's
  bool service = false;  // else a worker
  int kills = 0;         // SIGKILLs it got from KillAndRestart
  // When each kill was sent, UTC as the engine's log lines stamp theirs
  // ("2026-01-02T03:04:05.678Z").
  std::vector<std::string> kill_times;
};

// Now, stamped like the engine's JSON log lines.
std::string ChaosUtcNow();

// A child that died by itself during the soak, for the report: at its
// armed crash point when killed by SIGKILL with a point armed, otherwise an
// unexpected death (a bug: the run fails).
struct CrashDeath {
  std::string process;  // ChaosProcess::name
  std::string armed;    // PHASEKEY_CRASH_AT of that incarnation ("" if none)
  int exit_code = 0;    // 128 + signal when killed by one

  bool AtCrashPoint() const { return !armed.empty() && exit_code == 128 + SIGKILL; }
};

class ChaosServices {
 public:
  // Starts the database, then the gateway, the service (which migrates), and
  // the worker, each waited for until it listens (the worker: just started).
  // On failure stops whatever was started and returns why.
  static phasekey::Result<std::unique_ptr<ChaosServices>> Start(const ChaosServicesOptions& options);

  // Stops the children (SIGTERM, then SIGKILL after a grace period), then
  // the embedded database, then removes the run directory unless kept.
  ~ChaosServices();
  ChaosServices(const ChaosServices&) = delete;
  ChaosServices& operator=(const ChaosServices&) = delete;

  // Services, then workers.
  int process_count() const { return static_cast<int>(processes_.size()); }

  // SIGKILLs process `i` (0-based, services first, then workers) and starts
  // it again (a service on the same port, returning once it listens).
  // FailedPrecondition for a service after StopServices(), or when it
  // cannot be started again. Thread-safe.
  phasekey::Status KillAndRestart(int i);

  // The nemeses (nemesis.h). Each tells on_fault when it starts and when it
  // ends, blocks until it is over, and may be called from any one thread at
  // a time (the run's fault thread).
  //
  // SIGSTOPs process `i` (as KillAndRestart numbers them) for `d`, then
  // SIGCONTs it ("pause", "resume"). A process killed meanwhile is not
  // continued (its successor never stopped).
  phasekey::Status Pause(int i, std::chrono::milliseconds d);
  // Stops the run's own PostgreSQL in immediate mode (SIGQUIT: no
  // checkpoint, so the next start recovers from the WAL) and starts it
  // again on the same port ("db-crash", "db-start"). FailedPrecondition
  // unless owns_database().
  phasekey::Status RestartDatabase();
  // Drops every packet to and from the database's port on the loopback
  // (iptables INPUT rules) for `d`, then removes the rules ("partition",
  // "heal"). FailedPrecondition unless owns_database(), we are root and
  // iptables works. The destructor removes rules left behind.
  phasekey::Status CutDatabaseLink(std::chrono::milliseconds d);
  // Moves the wall clock of every service and worker `offset` forward for
  // `d`, then back ("clock-jump", "clock-back"). FailedPrecondition unless
  // the options asked for fake_clock.
  phasekey::Status JumpClock(std::chrono::seconds offset, std::chrono::milliseconds d);
  // Whether the run started its own database server (no --database-url, no
  // DATABASE_URL): the nemeses that hurt the server need it.
  bool owns_database() const { return embedded_ != nullptr; }
  // Why CutDatabaseLink cannot work here ("" when it can).
  std::string PartitionUnavailable() const;

  // Stops the services for good (SIGTERM); the workers and the gateway keep
  // running. Thread-safe; idempotent.
  void StopServices();

  // From now on, children started again are not armed (the ones running may
  // still die once at the point they carry). Thread-safe.
  void DisarmCrashPoints();

  // The deaths at crash points so far. Thread-safe.
  std::vector<CrashDeath> crash_deaths() const;

  // Every service and worker, with its kills so far. Thread-safe.
  std::vector<ChaosProcess> processes() const;

  // The gateway's ledger: the body of GET /_ledger.
  phasekey::Result<std::string> Ledger() const;

  void KeepRunDir() { keep_run_dir_ = true; }

  const std::string& database_url() const { return database_url_; }
  const std::string& run_dir() const { return run_dir_; }
  // The gateway's data folder (its ledger and operations journal).
  std::string gateway_dir() const { return run_dir_ + "/gateway"; }
  // Where clients send requests: the service's port, or the balancer's.
  int service_port() const { return entry_port_; }
  int gateway_port() const { return gateway_port_; }
  // The CA to reach the gateway over https with; "" when it serves http.
  const std::string& gateway_ca() const { return gateway_ca_; }
  // "https://127.0.0.1:PORT" with a CA, else "http://...".
  std::string GatewayUrl() const;
  // The gateway's API credential (for an operator's calls, e.g. refunds).
  const std::string& provider_secret() const { return provider_secret_; }

 private:
  ChaosServices() = default;
  phasekey::Status StartDatabase(const ChaosServicesOptions& o);
  phasekey::Status FindBinaries(const std::string& bin_dir);
  phasekey::Status StartGateway(const ChaosServicesOptions& o);
  // One service or worker process, across its incarnations.
  struct Slot {
    std::unique_ptr<ChildProcess> child;
    std::string armed;  // PHASEKEY_CRASH_AT of this incarnation ("" if none)
    int port = 0;       // a service's, kept across restarts
  };
  // Picks the services' ports and starts the balancer when there are several;
  // sets entry_port_.
  phasekey::Status PlanServices(int services);
  // Requires mu_ held. Starts (again) whichever slot `i` is.
  phasekey::Status StartSlot(std::size_t i);
  // Requires mu_ held. Starts service `i` on its port, retrying while the
  // port is still taken.
  phasekey::Status StartService(std::size_t i);
  // Requires mu_ held. Starts process `i`, a worker.
  phasekey::Status StartWorker(std::size_t i);
  // The flags every service and worker gets after its own.
  std::vector<std::string> CommonFlags() const;
  // Requires mu_ held. The environment of a new service or worker: the
  // provider credential, and a crash point to arm when the soak is on
  // (recorded as `*armed`).
  std::vector<std::string> ChildEnvironment(bool worker, std::string* armed);
  // Runs `task` on the thread children (and the database) are started from,
  // which lives as long as this object; returns its status.
  phasekey::Status OnSpawnThread(std::function<phasekey::Status()> task);
  // With `on`: checks that libfaketime is there and writes its offset file
  // (no offset yet).
  phasekey::Status PrepareFakeClock(bool on);
  // Requires mu_ held. What a child needs to run under libfaketime (empty
  // unless fake_clock).
  std::vector<std::string> FakeClockEnvironment() const;
  // Adds (`add`) or deletes the partition's iptables rules; true if all of
  // them took.
  bool PartitionRules(bool add) const;
  // The soak's supervisor: every few ms, starts again a service or worker
  // that died, until stop_supervisor_ is set.
  void Supervise();
  // Requires mu_ held. Starts again the ones that died; false if one could
  // not be started (the reason is logged to stderr).
  bool ReviveDead();

  std::unique_ptr<phasekey::EmbeddedPostgres> embedded_;  // replaced by RestartDatabase, on the fault thread
  std::string pg_dir_;                                    // the embedded server's base_dir
  int pg_port_ = 0;                                       // its port, kept across restarts
  bool fake_clock_ = false;                               // set once by Start
  std::string clock_file_;                                // libfaketime's offset (FAKETIME_TIMESTAMP_FILE)
  std::atomic<bool> link_cut_{false};                     // partition rules in place
  std::string database_url_;
  std::string ride_booking_path_, fake_gateway_path_;
  std::string run_dir_;
  bool keep_run_dir_ = false;
  int gateway_port_ = 0;
  std::string gateway_ca_;
  std::string provider_ = "stripe";                                                           // set once by Start
  std::string provider_secret_;                                                               // set once by Start
  std::string webhook_secret_;                                                                // set once by Start
  bool prepared_statements_ = true;                                                           // set once by Start
  std::string session_url_;                                                                   // set once by Start
  std::string kek_file_;                                                                      // set once by Start
  std::function<void(const std::string&, const std::string&, const std::string&)> on_fault_;  // set once by Start
  int entry_port_ = 0;
  std::unique_ptr<ChildProcess> gateway_;
  std::unique_ptr<ChaosBalancer> balancer_;  // with several services
  mutable std::mutex mu_;                    // guards what follows
  std::vector<ChaosProcess> processes_;      // GUARDED_BY(mu_) (their number is fixed by Start)
  std::vector<Slot> slots_;                  // GUARDED_BY(mu_): one per process, same order
  bool services_stopped_ = false;            // GUARDED_BY(mu_)
  bool crash_points_ = false;                // GUARDED_BY(mu_): arm new children
  int crash_every_ = 100;
  std::mt19937_64 crash_rng_;             // GUARDED_BY(mu_)
  std::vector<CrashDeath> deaths_;        // GUARDED_BY(mu_)
  std::unique_ptr<SpawnThread> spawner_;  // where KillAndRestart starts children again
  std::atomic<bool> stop_supervisor_{false};
  std::thread supervisor_;  // runs Supervise when the soak is on; children it starts are tied to it
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_SERVICES_H_
