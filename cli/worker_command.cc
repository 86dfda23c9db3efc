// `phasekey worker`: the reaper and the enqueuer (to stdout, one JSON line
// per job) until SIGINT or SIGTERM; with --metrics-listen, /metrics and
// /healthz on HOST:PORT (phasekey/tools/metrics_routes.h). The re-drive worker needs the
// application's flows, which this binary does not have: applications run it
// themselves (see `ride_booking worker` and phasekey/tools/worker_group.h).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "database_target.h"
#include "phasekey/tools/host_port.h"
#include "phasekey/tools/http_server.h"
#include "phasekey/tools/metrics_routes.h"
#include "phasekey/tools/stop_signals.h"
#include "phasekey/tools/worker_group.h"

namespace phasekey::cli {
namespace {

// Hands jobs on as JSON lines on stdout; accepted once written and flushed.
class StdoutSink final : public JobSink {
 public:
  Status Deliver(const std::vector<StagedJob>& jobs) override {
    for (const auto& j : jobs) {
      const std::string line =
          nlohmann::json{{"id", j.id}, {"name", j.name}, {"args", j.args}, {"created_at", j.created_at}}.dump();
      if (std::printf("%s\n", line.c_str()) < 0) return Status::Retryable("stdout is closed");
    }
    return std::fflush(stdout) == 0 ? Status::OK() : Status::Retryable("cannot flush stdout");
  }
};

struct Flags {
  DatabaseFlags db;
  bool redrive = false, reap = false, enqueue = false;
  int buckets = 0;  // 0: the deployment's, from the database
  int retention_hours = 72;
  int inbox_retention_days = 30;
  int dead_retention_days = 30;           // 0: dead keys are kept forever
  int needs_operator_retention_days = 0;  // 0: kept until an operator resolves them
  bool prepared_statements = true;        // DatabaseOptions::prepared_statements
  std::string metrics_listen;             // empty: no /metrics or /healthz
};

// Serves /metrics and /healthz on `listen` until destroyed; null when
// `listen` is empty. Exits with a message on a bad address or a failed bind.
std::unique_ptr<HttpServer> StartMetricsServer(const std::string& listen, std::shared_ptr<Metrics> metrics,
                                               const WorkerSelection& selection) {
  if (listen.empty()) return nullptr;
  const std::optional<HostPort> at = ParseHostPort(listen, PortZero::kAllowed);
  if (!at) Fail("worker", "--metrics-listen must be HOST:PORT, not '" + listen + "'", 2);
  auto server = phasekey::StartMetricsServer(*at, std::move(metrics), LivenessOf(selection));
  if (!server) Fail("worker", "--metrics-listen " + listen + ": " + server.error().ToString());
  std::printf("metrics on %s\n", FormatHostPort(at->host, (*server)->port()).c_str());
  std::fflush(stdout);
  return std::move(*server);
}

void RunWorker(const Flags& flags) {
  if (flags.redrive) {
    Fail("worker",
         "--redrive needs the application's flows, which the phasekey binary does not have; run the re-drive "
         "worker from your application (for the example: ride_booking worker)",
         2);
  }
  auto target = ResolveDatabase(flags.db);
  if (!target) Fail("worker", target.error().ToString());
  WorkerSelection selection;
  selection.redrive = false;
  const bool all = !flags.reap && !flags.enqueue;
  selection.reap = all || flags.reap;
  selection.enqueue = all || flags.enqueue;
  selection.reaper_options.buckets = flags.buckets;
  selection.reaper_options.retention = std::chrono::hours(flags.retention_hours);
  selection.reaper_options.inbox_retention = std::chrono::hours(24 * flags.inbox_retention_days);
  selection.reaper_options.dead_retention = std::chrono::hours(24 * flags.dead_retention_days);
  selection.reaper_options.needs_operator_retention = std::chrono::hours(24 * flags.needs_operator_retention_days);
  std::shared_ptr<Metrics> metrics = Metrics::Create();
  selection.reaper_options.metrics = metrics;
  selection.enqueuer_options.metrics = metrics;
  DatabaseOptions db;
  db.url = target->url;
  db.prepared_statements = flags.prepared_statements;
  StdoutSink sink;
  BlockStopSignals();  // before the server's threads start, so they inherit the mask
  const std::unique_ptr<HttpServer> server = StartMetricsServer(flags.metrics_listen, metrics, selection);
  Status s = RunWorkersUntilSignal(db, selection, nullptr, &sink);
  if (!s.ok()) Fail("worker", s.ToString());
}

}  // namespace

void RegisterWorkerCommand(CLI::App& app) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("worker", "run the reaper and the staged-job enqueuer until SIGINT/SIGTERM");
  flags->db.AddTo(cmd);
  cmd->add_flag("--redrive", flags->redrive, "re-drive abandoned keys (needs the application's flows: refused here)");
  cmd->add_flag("--reap", flags->reap, "delete finished and dead keys, and applied inbox events, past their retention");
  cmd->add_flag("--enqueue", flags->enqueue, "hand staged jobs on, as JSON lines on stdout");
  cmd->add_option("--buckets", flags->buckets,
                  "a check: the services' bucket count (default: the one stored in the database)")
      ->check(CLI::Range(1, 32767));
  cmd->add_option("--retention-hours", flags->retention_hours, "how long finished keys are kept")
      ->check(CLI::Range(1, 24 * 365));
  cmd->add_option("--inbox-retention-days", flags->inbox_retention_days,
                  "how long applied inbox events are kept (parked ones always are)")
      ->check(CLI::Range(1, 3650));
  cmd->add_option("--dead-retention-days", flags->dead_retention_days,
                  "how long dead keys are kept after they died (0: forever)")
      ->check(CLI::Range(0, 3650));
  cmd->add_option("--needs-operator-retention-days", flags->needs_operator_retention_days,
                  "how long keys parked for an operator are kept (0, the default: until an operator resolves them)")
      ->check(CLI::Range(0, 3650));
  // No --session-url: without --redrive nothing here LISTENs (the reaper and
  // the enqueuer poll), so every connection can go through a pooler.
  cmd->add_flag("--prepared-statements,!--no-prepared-statements", flags->prepared_statements,
                "prepare statements once per connection (off behind a transaction-mode pooler such as PgBouncer)");
  cmd->add_option("--metrics-listen", flags->metrics_listen,
                  "HOST:PORT to serve /metrics and /healthz on (port 0: any free; default: none)");
  cmd->callback([flags] { RunWorker(*flags); });
}

}  // namespace phasekey::cli
