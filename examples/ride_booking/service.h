// `ride_booking serve` and `ride_booking worker`: the Rocket Rides service on
// phasekey, and its background workers.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_SERVICE_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_SERVICE_H_

#include <string>

namespace ride_booking {

struct ServiceFlags {
  std::string database_url;                          // empty: $DATABASE_URL, else embedded
  std::string pg_dir = ".phasekey/ride-booking-pg";  // embedded server's directory
  std::string listen = "127.0.0.1:8080";
  std::string gateway_url = "http://127.0.0.1:8081";
  // BeastHttpClientOptions::ca_file: a PEM file of CAs trusted for an https
  // gateway beside the system's store (fake_gateway --tls-cert's CA); empty:
  // the system's store only.
  std::string provider_ca_file;
  // BeastHttpClientOptions::keep_alive: reuse connections to the gateway.
  bool provider_keep_alive = true;
  // Which payment provider the gateway speaks (ProviderNames(),
  // ride_charger.h); fake_gateway must run with the same --dialect.
  std::string provider = "stripe";
  // How the stripe provider charges: "payment_intents" or "charges"
  // (StripeApiNamed(), ride_charger.h).
  std::string stripe_api = "payment_intents";
  int lease_seconds = 15;
  int charge_timeout_ms = 5000;
  // How long the provider's lookup may lag behind a charge
  // (AdapterOptions::lookup_window); -1: the adapter's own default.
  // fake_gateway's lookups lag --lookup-lag-ms (0 by default).
  int lookup_window_ms = -1;
  // RunnerOptions::give_up_after, in hours.
  int give_up_after_hours = 12;
  // How long start-up waits for a database it cannot reach yet (starting
  // up, restarting, its link down) before it gives up; 0: at once.
  int database_wait_s = 30;
  // DatabaseOptions::prepared_statements: false behind a transaction-mode
  // pooler such as Debian 12's PgBouncer 1.18 (docs/scaling.md).
  bool prepared_statements = true;
  // DatabaseOptions::session_url: a direct (or session-pooled) URL for the
  // re-drive worker's LISTEN when --database-url goes through such a
  // pooler. Empty: --database-url. Only the worker LISTENs.
  std::string session_url;
  // RunnerOptions::encryption: the key-encryption keys that seal stored
  // bodies (docs/data-protection.md). Both empty: $PHASEKEY_KEK_FILE when
  // set, else bodies are stored as they are.
  std::string kek_file, kek_command;
  // serve only: HttpServerOptions::max_connections (0: half the soft
  // RLIMIT_NOFILE), ::max_connections_per_address (0: no limit) and
  // ::header_timeout, in milliseconds.
  int max_connections = 0;
  int max_connections_per_address = 256;
  int header_timeout_ms = 5000;
  // worker only
  bool redrive = false, reap = false, enqueue = false;
  int concurrency = 4;
  int poll_ms = 1000;
  // Wait between reaper sweeps (each also audits for clients that
  // regenerate keys, phasekey/workers.h).
  int reap_interval_ms = 60000;
  // The worker's /metrics. Port 0 picks a free port (printed as "metrics on
  // HOST:PORT"), so several workers can share a host; set it for scraping.
  std::string metrics_listen = "127.0.0.1:0";
};

// Both block until SIGINT or SIGTERM and return the process exit status;
// start-up failures print one line on stderr and return 1.
int Serve(const ServiceFlags& flags);
int RunWorker(const ServiceFlags& flags);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_SERVICE_H_
