// ChaosServices: everything a chaos run talks to, started and stopped as a
// unit: the database (a URL, or an embedded server), fake_gateway with its
// faults and a fresh ledger, `ride_booking serve` and `ride_booking worker`.
// The gateway delivers its webhook events (payment_intent.succeeded or
// charge.succeeded, charge.refunded) to the service's POST
// /webhooks/gateway, signed with a secret fresh per
// run; the service's port is chosen before the gateway starts, and kept
// across restarts, so deliveries meet a killed service and then a new one.
// Their stderr goes to log files in a fresh run directory under the system
// temp directory (gateway.log, service.log, worker.log; the gateway's ledger
// in gateway/), removed at the end unless KeepRunDir() was called.
//
// Children are tied to the thread that spawned them (see chaos_process.h):
// create the object on a thread that outlives it, and call
// KillAndRestartService only from a thread that lives until StopService()
// has returned.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_SERVICES_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_SERVICES_H_

#include <atomic>
#include <csignal>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chaos_process.h"
#include "phasekey/embedded_postgres.h"
#include "phasekey/status.h"

namespace ride_booking {

struct ChaosServicesOptions {
  std::string database_url;  // empty: $DATABASE_URL, else an embedded server in pg_dir
  std::string pg_dir;
  std::string bin_dir;       // empty: the directory of this executable
  double fail_rate = 0;      // the gateway's faults
  double drop_response_rate = 0;
  int latency_ms = 0;
  unsigned seed = 0;         // the gateway's fault dice
  std::string provider = "stripe";  // the gateway's --dialect, the service's and worker's --provider
  // The soak: each start of the service and of the worker arms one crash
  // point (phasekey/crash_point.h) drawn from the ride flow's, at a hit drawn
  // from 1..crash_every; a child that dies is started again at once (with a
  // new point). Needs a build with crash points (refused otherwise).
  bool crash_points = false;
  int crash_every = 100;
};

// A child that died by itself during the soak, for the report: at its
// armed crash point when killed by SIGKILL with a point armed, otherwise an
// unexpected death (a bug: the run fails).
struct CrashDeath {
  std::string process;  // "service" or "worker"
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

  // SIGKILLs the service and starts it again on the same port; returns once
  // it listens. FailedPrecondition after StopService(), or when it cannot be
  // started again. Thread-safe.
  phasekey::Status KillAndRestartService();

  // Stops the service for good (SIGTERM); the worker and the gateway keep
  // running. Thread-safe; idempotent.
  void StopService();

  // From now on, children started again are not armed (the ones running may
  // still die once at the point they carry). Thread-safe.
  void DisarmCrashPoints();

  // The deaths at crash points so far. Thread-safe.
  std::vector<CrashDeath> crash_deaths() const;

  // Starts the service again after StopService() (for the webhook
  // deliveries still pending once the clients are done), tied to the calling
  // thread. Thread-safe.
  phasekey::Status ResumeService();

  // The gateway's ledger: the body of GET /_ledger.
  phasekey::Result<std::string> Ledger() const;

  void KeepRunDir() { keep_run_dir_ = true; }

  const std::string& database_url() const { return database_url_; }
  const std::string& run_dir() const { return run_dir_; }
  int service_port() const { return service_port_; }
  int gateway_port() const { return gateway_port_; }
  // The gateway's API credential (for an operator's calls, e.g. refunds).
  const std::string& provider_secret() const { return provider_secret_; }

 private:
  ChaosServices() = default;
  phasekey::Status StartDatabase(const ChaosServicesOptions& o);
  phasekey::Status FindBinaries(const std::string& bin_dir);
  phasekey::Status StartGateway(const ChaosServicesOptions& o);
  // Starts the service on `port` (0: any), retrying while the port is still
  // taken; sets service_port_.
  phasekey::Status StartService(int port);
  // Requires mu_ held. Starts the worker; sets worker_.
  phasekey::Status StartWorker();
  // Requires mu_ held. The environment of a new service or worker: the
  // provider credential, and a crash point to arm when the soak is on
  // (recorded as `*armed`).
  std::vector<std::string> ChildEnvironment(bool worker, std::string* armed);
  // The soak's supervisor: every few ms, starts again a service or worker
  // that died, until stop_supervisor_ is set.
  void Supervise();
  // Requires mu_ held. Starts again the ones that died; false if one could
  // not be started (the reason is logged to stderr).
  bool ReviveDead();

  std::unique_ptr<phasekey::EmbeddedPostgres> embedded_;
  std::string database_url_;
  std::string ride_booking_path_, fake_gateway_path_;
  std::string run_dir_;
  bool keep_run_dir_ = false;
  int gateway_port_ = 0;
  std::string provider_ = "stripe";  // set once by Start
  std::string provider_secret_;      // set once by Start
  std::string webhook_secret_;       // set once by Start
  int service_port_ = 0;
  std::unique_ptr<ChildProcess> gateway_;
  mutable std::mutex mu_;                  // guards what follows
  std::unique_ptr<ChildProcess> service_;  // GUARDED_BY(mu_)
  std::unique_ptr<ChildProcess> worker_;   // GUARDED_BY(mu_)
  bool service_stopped_ = false;           // GUARDED_BY(mu_)
  bool crash_points_ = false;              // GUARDED_BY(mu_): arm new children
  int crash_every_ = 100;
  std::mt19937_64 crash_rng_;              // GUARDED_BY(mu_)
  std::string service_armed_, worker_armed_;  // GUARDED_BY(mu_): what each carries
  std::vector<CrashDeath> deaths_;         // GUARDED_BY(mu_)
  std::atomic<bool> stop_supervisor_{false};
  std::thread supervisor_;  // runs Supervise when the soak is on; children it starts are tied to it
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_SERVICES_H_
