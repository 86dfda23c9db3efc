// fake_gateway: a payment gateway's charges API over HTTP (Stripe's by
// default; --dialect picks another provider's, see dialect.h), with a durable ledger
// and injectable faults, for the ride booking example and its tests. See
// gateway.h for the routes and server.h for the transport.
//
// On start it prints "listening on HOST:PORT" as its first stdout line (the
// real port when --listen asks for port 0) and flushes. It runs until
// SIGTERM or SIGINT, then stops serving and exits 0.
//
// FAKE_GATEWAY_SECRET, when set and not empty, is the API credential every
// provider route requires (gateway.h); an environment variable rather than a
// flag, so it never shows in the process list.
//
// With --webhook-url, every charge and refund in the ledger is sent as a
// Stripe-format webhook event to that URL, at least once and out of order
// (webhook_sender.h), signed with FAKE_GATEWAY_WEBHOOK_SECRET (required
// then). Events still undelivered when the gateway stops are derived again
// from the ledger on the next start.
#include <CLI/CLI.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>

#include "fake_gateway/gateway.h"
#include "fake_gateway/server.h"
#include "fake_gateway/webhook_sender.h"
#include "phasekey/tools/host_port.h"
#include "phasekey/tools/stop_signals.h"

namespace fake_gateway {
namespace {

struct Flags {
  std::string listen = "127.0.0.1:8081";
  std::string data_dir = (std::filesystem::temp_directory_path() / "phasekey-fake-gateway").string();
  double retention_hours = 24;
  Faults faults;
  uint64_t seed = 0;
  std::string dialect = "stripe";
  int64_t lookup_lag_ms = 0;
  std::string webhook_url;
  double webhook_duplicate_rate = 0.2;
  double webhook_reorder_rate = 0.5;
  std::string tls_cert;
  std::string tls_key;
};

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--listen", flags.listen, "HOST:PORT to listen on; port 0 picks a free one")->capture_default_str();
  app.add_option("--data-dir", flags.data_dir, "directory of the durable ledger")->capture_default_str();
  app.add_option("--retention-hours", flags.retention_hours,
                 "how long a stored response is replayed under its idempotency key "
                 "(POST /_forget_keys forgets them all at once)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--fail-rate", flags.faults.fail_rate, "probability of a 500 before charging")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--drop-response-rate", flags.faults.drop_response_rate,
                 "probability of closing the connection after charging, without a response")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--latency-ms", flags.faults.latency_ms, "sleep before each charge is made")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, kMaxLatencyMs));
  app.add_option("--lookup-lag-ms", flags.lookup_lag_ms,
                 "how long after a charge is made searches and queries start to list it (retrieves by id: at once)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{24} * 3600 * 1000));
  app.add_option("--dialect", flags.dialect, "which provider's API to imitate")
      ->capture_default_str()
      ->check(CLI::IsMember(DialectNames()));
  app.add_option("--tls-cert", flags.tls_cert,
                 "PEM certificate (chain) to serve https with; with --tls-key, https only");
  app.add_option("--tls-key", flags.tls_key, "PEM private key of --tls-cert");
  app.add_option("--seed", flags.seed, "seed of the fault dice (default: random)");
  app.add_option("--webhook-url", flags.webhook_url,
                 "send charge.succeeded / charge.refunded events here (http://host:port/path)");
  app.add_option("--webhook-duplicate-rate", flags.webhook_duplicate_rate,
                 "probability of delivering an acknowledged event once more")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--webhook-reorder-rate", flags.webhook_reorder_rate,
                 "probability of delivering a random due event instead of the oldest")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "fake_gateway: %s\n", message.c_str());
  return 1;
}

// The webhook sender for --webhook-url (null without one); sets *error and
// returns null when it cannot start.
std::unique_ptr<WebhookSender> StartSender(const Flags& flags, uint64_t seed, std::string* error) {
  if (flags.webhook_url.empty()) return nullptr;
  WebhookSenderOptions o;
  o.url = flags.webhook_url;
  if (const char* secret = std::getenv("FAKE_GATEWAY_WEBHOOK_SECRET"); secret != nullptr) o.secret = secret;
  o.delivered_file = std::filesystem::path(flags.data_dir) / "webhooks_delivered.txt";
  o.duplicate_rate = flags.webhook_duplicate_rate;
  o.reorder_rate = flags.webhook_reorder_rate;
  o.seed = seed;
  return WebhookSender::Start(std::move(o), error);
}

int Run(const Flags& flags, bool seed_given) {
  ServerOptions server_options;
  // "HOST:PORT" or "[V6]:PORT"; port 0 picks a free one.
  const std::optional<phasekey::HostPort> listen = phasekey::ParseHostPort(flags.listen, phasekey::PortZero::kAllowed);
  if (!listen) return Fail("--listen wants HOST:PORT");
  server_options.host = listen->host;
  server_options.port = listen->port;
  server_options.tls_cert_file = flags.tls_cert;
  server_options.tls_key_file = flags.tls_key;
  GatewayOptions options;
  options.data_dir = flags.data_dir;
  options.retention = std::chrono::seconds(std::max<int64_t>(1, std::llround(flags.retention_hours * 3600)));
  options.faults = flags.faults;
  options.dialect = flags.dialect;
  options.lookup_lag = std::chrono::milliseconds(flags.lookup_lag_ms);
  options.seed = seed_given ? flags.seed : std::random_device{}();
  if (const char* secret = std::getenv("FAKE_GATEWAY_SECRET"); secret != nullptr) options.secret = secret;
  // Block the stop signals in every thread (the webhook sender's and the
  // server's threads inherit the mask, so start them after this), so that
  // WaitForStopSignal below is the one place that receives them.
  const sigset_t stop_signals = phasekey::BlockStopSignals();
  std::signal(SIGPIPE, SIG_IGN);
  std::string error;
  std::unique_ptr<WebhookSender> sender = StartSender(flags, options.seed, &error);
  if (!sender && !flags.webhook_url.empty()) return Fail(error);
  if (sender) {
    options.on_recorded = [s = sender.get()](const LedgerEntry& entry) {
      for (const WebhookEvent& e : EventsOf(entry)) s->Enqueue(e);
    };
  }
  std::unique_ptr<Gateway> gateway = Gateway::Open(std::move(options), &error);
  if (!gateway) return Fail(error);
  if (sender) {  // what earlier runs recorded but did not deliver
    for (const WebhookEvent& e : EventsOfLedger(gateway->Charges(), gateway->Refunds())) sender->Enqueue(e);
  }
  std::unique_ptr<Server> server = Server::Start(gateway.get(), server_options, &error);
  if (!server) return Fail(error);
  std::printf("listening on %s\n", server->address().c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "fake_gateway: %s dialect, ledger in %s\n", flags.dialect.c_str(), flags.data_dir.c_str());
  phasekey::WaitForStopSignal(stop_signals);
  server->Stop();
  if (sender) sender->Stop();
  return 0;
}

}  // namespace
}  // namespace fake_gateway

int main(int argc, char** argv) {
  CLI::App app{
      "fake_gateway: a payment gateway (Stripe, Adyen, Square, Tap, Moyasar or HyperPay dialect) with a durable "
      "ledger and injectable faults",
      "fake_gateway"};
  fake_gateway::Flags flags;
  fake_gateway::AddFlags(app, flags);
  CLI11_PARSE(app, argc, argv);
  return fake_gateway::Run(flags, app.count("--seed") > 0);
}
