// ride_booking: Leach's Rocket Rides on phasekey.
//   ride_booking serve   the HTTP service (POST /rides, GET /rides, GET /healthz)
//   ride_booking worker  re-drive, reaper and receipt enqueuer for its flow
//   ride_booking chaos   the chaos demo: clients, faults, SIGKILLed services and workers, report
//   ride_booking check-deploy  the deploy gate for its flows (exit 1: keys would be stranded)
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "chaos/chaos.h"
#include "phasekey/tools/operator_commands.h"
#include "refund_flow.h"
#include "ride_charger.h"
#include "ride_flow.h"
#include "service.h"

namespace {

void AddServiceFlags(CLI::App* cmd, ride_booking::ServiceFlags* f) {
  cmd->add_option("--database-url", f->database_url, "PostgreSQL URL (default: $DATABASE_URL, else embedded)");
  cmd->add_option("--pg-dir", f->pg_dir, "directory of the embedded PostgreSQL");
  cmd->add_option("--gateway-url", f->gateway_url, "the payment gateway (fake_gateway)");
  cmd->add_option("--provider-ca-file", f->provider_ca_file,
                  "PEM file of CAs to trust for an https gateway, beside the system's (fake_gateway --tls-cert's CA)");
  cmd->add_flag("--provider-keep-alive,!--no-provider-keep-alive", f->provider_keep_alive,
                "reuse connections to the gateway (off: one connection per call)");
  cmd->add_option("--provider", f->provider, "the gateway's provider dialect (fake_gateway --dialect)")
      ->capture_default_str()
      ->check(CLI::IsMember(ride_booking::ProviderNames()));
  cmd->add_option("--stripe-api", f->stripe_api,
                  "how the stripe provider charges: payment_intents (created and confirmed at once) or charges "
                  "(the Charges API of older accounts)")
      ->capture_default_str()
      ->check(CLI::IsMember({"payment_intents", "charges"}));
  cmd->add_option("--lease-seconds", f->lease_seconds, "how long a holder owns a key between phases")
      ->check(CLI::Range(2, 3600));
  cmd->add_option("--charge-timeout-ms", f->charge_timeout_ms, "the longest a gateway call may take")
      ->check(CLI::Range(100, 600000));
  cmd->add_option("--lookup-window-ms", f->lookup_window_ms,
                  "how long the provider's lookup may lag behind a charge (-1: the adapter's default)")
      ->check(CLI::Range(-1, 24 * 3600 * 1000));
  cmd->add_option("--give-up-after-hours", f->give_up_after_hours,
                  "the key age past which nothing new is sent (RunnerOptions::give_up_after)")
      ->capture_default_str()
      ->check(CLI::Range(1, 24 * 365));
  cmd->add_option("--database-wait-s", f->database_wait_s,
                  "how long start-up waits for a database it cannot reach yet (starting up, restarting)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  cmd->add_flag("--prepared-statements,!--no-prepared-statements", f->prepared_statements,
                "prepare statements once per connection (off behind a transaction-mode pooler such as PgBouncer)");
  cmd->add_option("--session-url", f->session_url,
                  "direct PostgreSQL URL for the re-drive worker's LISTEN when --database-url is pooled "
                  "(default: $RIDE_BOOKING_SESSION_URL)")
      ->envname("RIDE_BOOKING_SESSION_URL");
  CLI::Option* kek_file = cmd->add_option(
      "--kek-file", f->kek_file,
      "key-encryption keys that seal stored bodies: '<id> <64 hex digits>' lines, current first, mode 0600 "
      "(default: $PHASEKEY_KEK_FILE; neither: bodies stored in clear)");
  cmd->add_option("--kek-command", f->kek_command, "instead of --kek-file: a command (sh -c) printing the same lines")
      ->excludes(kek_file);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ride_booking: Leach's Rocket Rides on phasekey", "ride_booking"};
  app.require_subcommand(1);
  ride_booking::ServiceFlags serve_flags, worker_flags;
  ride_booking::ChaosFlags chaos_flags;
  int code = 0;

  CLI::App* serve = app.add_subcommand("serve", "run the ride booking HTTP service");
  AddServiceFlags(serve, &serve_flags);
  serve->add_option("--listen", serve_flags.listen, "HOST:PORT to listen on (port 0: any free port)");
  serve
      ->add_option("--max-connections", serve_flags.max_connections,
                   "connections open at once (0: half the soft RLIMIT_NOFILE)")
      ->check(CLI::Range(0, 1 << 20));
  serve
      ->add_option("--max-connections-per-address", serve_flags.max_connections_per_address,
                   "connections open at once from one client address (0: no limit; behind a proxy)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  serve
      ->add_option("--header-timeout-ms", serve_flags.header_timeout_ms,
                   "the longest a request's headers (or an idle kept-alive connection) may take")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  serve->callback([&] { code = ride_booking::Serve(serve_flags); });

  CLI::App* worker = app.add_subcommand("worker", "re-drive abandoned rides, reap old keys, send receipts");
  AddServiceFlags(worker, &worker_flags);
  worker->add_flag("--redrive", worker_flags.redrive, "run the re-drive worker");
  worker->add_flag("--reap", worker_flags.reap, "run the reaper");
  worker->add_flag("--enqueue", worker_flags.enqueue, "run the receipt enqueuer");
  worker->add_option("--concurrency", worker_flags.concurrency, "keys re-driven at once")->check(CLI::Range(1, 256));
  worker->add_option("--poll-ms", worker_flags.poll_ms, "wait between polls when idle")->check(CLI::Range(10, 600000));
  worker
      ->add_option("--reap-interval-ms", worker_flags.reap_interval_ms,
                   "wait between reaper sweeps (each also audits for clients that regenerate keys)")
      ->check(CLI::Range(10, 86400000));
  worker->add_option("--metrics-listen", worker_flags.metrics_listen, "HOST:PORT of /metrics (port 0: any free)");
  worker->callback([&] { code = ride_booking::RunWorker(worker_flags); });

  CLI::App* chaos = app.add_subcommand("chaos", "the chaos demo: many clients, faults, SIGKILLed services and workers");
  ride_booking::AddChaosFlags(chaos, &chaos_flags);
  chaos->callback([&] {
    chaos_flags.argv.assign(argv, argv + argc);
    code = ride_booking::RunChaos(chaos_flags);
  });

  // The operator's commands (keys, stats, reap, flows, console) for this
  // binary's flows. The gateway client is only needed to build them. Each is
  // listed in --help; everything after its name (its own --help included) is
  // handed to phasekey, which parses it.
  const ride_booking::RideCharger graph_only("stripe", "http://127.0.0.1:8081", std::chrono::seconds(5));
  const std::vector<std::shared_ptr<const phasekey::Flow>> flows = {ride_booking::MakeRideFlow(graph_only),
                                                                    ride_booking::MakeBookingFlow(graph_only),
                                                                    ride_booking::MakeRefundFlow(graph_only)};
  // The deploy gate for these flows (phasekey/deploy_gate.h): run before
  // this binary replaces a running one; exit 1 listing flow, point and key
  // count when an unfinished key is at a point these flows do not know.
  std::string gate_database_url;
  CLI::App* gate = app.add_subcommand(
      "check-deploy", "the deploy gate: exit 1 when an unfinished key is at a point this binary's flows do not know");
  gate->add_option("--database-url", gate_database_url, "PostgreSQL URL (default: $DATABASE_URL)");
  gate->callback([&] {
    std::vector<std::string> args = {"flows", "check"};
    if (!gate_database_url.empty()) args.insert(args.end(), {"--database-url", gate_database_url});
    code = phasekey::RunOperatorCommand("ride_booking", args, flows);
  });

  for (const phasekey::OperatorCommand& c : phasekey::OperatorCommands()) {
    CLI::App* cmd = app.add_subcommand(c.name, c.description);
    cmd->prefix_command();
    cmd->set_help_flag();
    cmd->callback([&code, &flows, cmd, name = c.name] {
      std::vector<std::string> args = {name};
      for (std::string& word : cmd->remaining()) args.push_back(std::move(word));
      code = phasekey::RunOperatorCommand("ride_booking", args, flows);
    });
  }

  CLI11_PARSE(app, argc, argv);
  return code;
}
