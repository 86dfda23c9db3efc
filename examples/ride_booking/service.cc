#include "service.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "payment_events.h"
#include "phasekey/http.h"
#include "phasekey/inbox.h"
#include "phasekey/phases/stripe_event.h"
#include "phasekey/runner.h"
#include "phasekey/tools/embedded_postgres.h"
#include "phasekey/tools/host_port.h"
#include "phasekey/tools/http_server.h"
#include "phasekey/tools/metrics_routes.h"
#include "phasekey/tools/stop_signals.h"
#include "phasekey/tools/worker_group.h"
#include "phasekey/webhook_endpoint.h"
#include "refund_flow.h"
#include "ride_flow.h"
#include "ride_store.h"

namespace ride_booking {
namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "ride_booking: %s\n", what.c_str());
  return 1;
}

// The database: the flag, $DATABASE_URL, or the embedded server in
// --pg-dir kept in `*embedded` for the process's life. When another process
// (`serve` for its `worker`) already runs that server, this one connects to
// it; the server then stops when the process that started it does.
phasekey::Result<std::string> Database(const ServiceFlags& f, std::unique_ptr<phasekey::EmbeddedPostgres>* embedded) {
  if (!f.database_url.empty()) return f.database_url;
  if (const char* env = std::getenv("DATABASE_URL"); env != nullptr && *env != '\0') return std::string(env);
  phasekey::EmbeddedPostgresOptions o;
  o.base_dir = f.pg_dir;
  o.attach_to_running = true;
  auto server = phasekey::EmbeddedPostgres::Start(o);
  if (!server) return server.error();
  *embedded = std::move(*server);
  const std::string owner = (*embedded)->owns_server()
                                ? "started here"
                                : "started by another process, pid " + std::to_string((*embedded)->pid());
  std::fprintf(stderr, "ride_booking: embedded PostgreSQL at %s (%s; data in %s)\n", (*embedded)->display_url().c_str(),
               owner.c_str(), f.pg_dir.c_str());
  return (*embedded)->url();
}

phasekey::Result<std::unique_ptr<phasekey::Runner>> OpenRunner(const ServiceFlags& f, const std::string& url,
                                                               const RideCharger* charger,
                                                               std::shared_ptr<phasekey::Metrics> metrics) {
  phasekey::RunnerOptions o;
  o.metrics = std::move(metrics);
  o.log_requests = true;
  o.database.url = url;
  o.database.pool_size = 16;
  o.database.prepared_statements = f.prepared_statements;
  o.database.session_url = f.session_url;
  o.lease = std::chrono::seconds(f.lease_seconds);
  o.give_up_after = std::chrono::hours(f.give_up_after_hours);
  // The margin must cover a database call (call_deadline stays below it;
  // Runner::Open checks) and fit beside the charge in the lease: what the
  // charge leaves of the lease, between 0.3 and 5 s.
  const auto charge = std::chrono::milliseconds(f.charge_timeout_ms);
  o.lease_margin = std::clamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(o.lease - charge) - std::chrono::milliseconds(100),
      std::chrono::milliseconds(300), std::chrono::milliseconds(5000));
  o.database.call_deadline = o.lease_margin - std::chrono::milliseconds(100);
  o.redrive_delay = std::chrono::milliseconds(500);
  o.redrive_delay_cap = std::chrono::milliseconds(10000);
  o.encryption.kek_file = f.kek_file;
  o.encryption.kek_command = f.kek_command;
  if (!o.encryption.enabled()) {
    if (const char* env = std::getenv("PHASEKEY_KEK_FILE"); env != nullptr && *env != '\0') o.encryption.kek_file = env;
  }
  return phasekey::Runner::Open(o, {MakeRideFlow(*charger), MakeBookingFlow(*charger), MakeRefundFlow(*charger)});
}

phasekey::Response Json(int status, const nlohmann::json& body) {
  phasekey::Response r;
  r.status = status;
  r.headers.Add("Content-Type", "application/json");
  r.body = body.dump();
  return r;
}

bool IsWebhook(const phasekey::HttpRequest& req) {
  const std::string_view path = std::string_view(req.target).substr(0, req.target.find('?'));
  return req.method == "POST" && path == kWebhookPath;
}

// Why the body of a ride request (POST /rides, POST /bookings) is not a
// ride (InvalidRideParams), or "" when it is one or is not JSON at all (the
// engine answers 400 for that). The body is read through
// req.ParsedBody(), the parse the engine then reuses; a body that is not
// I-JSON (a duplicate member, say), which the engine refuses, is read by
// nlohmann's more lenient parser as before, so that such a body that is
// not a ride either still gets this 422.
std::string RideProblem(const phasekey::HttpRequest& req) {
  if (const auto& parsed = req.ParsedBody(); parsed) return InvalidRideParams((*parsed)->document());
  const auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return "";
  return InvalidRideParams(body);
}

// GET /healthz, GET /metrics, GET /rides, the ride parameter check before
// POST /rides and POST /bookings, and POST /webhooks/gateway (signed, not
// authenticated).
phasekey::PlainRoutes Routes(RideStore* store, const phasekey::HttpHandler* handler,
                             std::shared_ptr<phasekey::Metrics> metrics, const phasekey::WebhookEndpoint* webhooks) {
  return [store, handler, metrics_page = phasekey::MetricsRoutes(metrics), webhooks](
             const phasekey::HttpRequest& req, const std::string* account) -> std::optional<phasekey::Response> {
    if (IsWebhook(req)) return webhooks->Handle(req);
    if (req.method == "GET" && req.target == "/metrics") return metrics_page(req, account);
    if (req.method == "GET" && req.target == "/healthz") {
      phasekey::Status s = store->Ping();
      if (s.ok()) return Json(200, {{"status", "ok"}});
      return handler->MakeProblem(503, "database-unavailable", "Database Unavailable", "The database does not answer.");
    }
    if (account == nullptr) return std::nullopt;  // the server answers 401
    if (req.method == "GET" && req.target == "/rides") {
      auto rides = store->ListRides(*UserOf(*account));
      if (rides) return Json(200, *rides);
      return handler->MakeProblem(503, "database-unavailable", "Database Unavailable", rides.error().message());
    }
    if (req.method == "POST" && (req.target == "/rides" || req.target == "/bookings")) {
      if (std::string why = RideProblem(req); !why.empty()) {
        return handler->MakeProblem(422, "invalid-ride", "Invalid Ride Parameters", why);
      }
    }
    return std::nullopt;
  };
}

// The gateway's webhook events into ride_payments, through the inbox. The
// endpoint's secret is $RIDE_BOOKING_WEBHOOK_SECRET; without it every
// delivery is answered 500 (and the gateway keeps it for later).
phasekey::Result<std::unique_ptr<phasekey::Inbox>> OpenInbox(const phasekey::Runner& runner,
                                                             std::shared_ptr<phasekey::Metrics> metrics) {
  phasekey::InboxOptions o;
  o.metrics = std::move(metrics);
  return phasekey::Inbox::Open(runner.options().database, ApplyPaymentEvent, o);
}

phasekey::WebhookEndpointOptions WebhookOptions() {
  phasekey::WebhookEndpointOptions o;
  const char* secret = std::getenv("RIDE_BOOKING_WEBHOOK_SECRET");
  o.secret = secret != nullptr ? secret : "";
  o.docs_url = kDocsUrl;
  return o;
}

}  // namespace

namespace {

// The charger for --provider, with the provider's API credential from
// $RIDE_BOOKING_PROVIDER_SECRET (an environment variable, not a flag, so it
// never shows in the process list).
phasekey::Result<std::unique_ptr<RideCharger>> NewCharger(const ServiceFlags& f) {
  const char* secret = std::getenv("RIDE_BOOKING_PROVIDER_SECRET");
  const auto stripe_api = StripeApiNamed(f.stripe_api);
  if (!stripe_api) return phasekey::Status::InvalidArgument("unknown Stripe API: " + f.stripe_api);
  std::optional<std::chrono::milliseconds> window;
  if (f.lookup_window_ms >= 0) window = std::chrono::milliseconds(f.lookup_window_ms);
  phasekey::phases::BeastHttpClientOptions http;
  http.ca_file = f.provider_ca_file;
  http.keep_alive = f.provider_keep_alive;
  try {
    return std::make_unique<RideCharger>(f.provider, f.gateway_url, std::chrono::milliseconds(f.charge_timeout_ms),
                                         secret != nullptr ? secret : "", *stripe_api, window, std::move(http));
  } catch (const std::invalid_argument& e) {
    return phasekey::Status::InvalidArgument(e.what());
  }
}

// What the service and the worker both stand on. Members are destroyed in
// reverse order, so the runner goes before the charger its flow uses, and
// the embedded server (if any) last.
struct Backend {
  std::unique_ptr<phasekey::EmbeddedPostgres> embedded;  // null with a database URL
  std::unique_ptr<RideStore> store;
  std::unique_ptr<RideCharger> charger;
  std::shared_ptr<phasekey::Metrics> metrics;
  std::unique_ptr<phasekey::Runner> runner;
};

// Migrates, waiting up to --database-wait-s for a database that cannot be
// reached yet (starting up, restarting, its link down: a retryable error or
// a deadline), so that a process started beside a restarting database comes
// up with it instead of exiting. A stop signal (of `stop`, blocked) ends the
// wait with the last error.
phasekey::Status MigrateWhenReachable(const ServiceFlags& f, RideStore& store, const sigset_t& stop) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(f.database_wait_s);
  std::chrono::milliseconds pause{250};
  for (bool said = false;; said = true) {
    phasekey::Status s = store.Migrate();
    const bool unreachable = s.IsRetryable() || s.code() == phasekey::StatusCode::kDeadlineExceeded;
    if (s.ok() || !unreachable || std::chrono::steady_clock::now() + pause > deadline) return s;
    if (!said) {
      std::fprintf(stderr, "ride_booking: waiting up to %d s for the database: %s\n", f.database_wait_s,
                   s.ToString().c_str());
    }
    const timespec wait{static_cast<time_t>(pause.count() / 1000), static_cast<long>(pause.count() % 1000) * 1000000};
    if (sigtimedwait(&stop, nullptr, &wait) > 0) return s;  // asked to stop: give up now
    pause = std::min(pause * 2, std::chrono::milliseconds(2000));
  }
}

// The database (started if embedded), migrated; the charger; the metrics;
// the runner with the ride flow. The error says which step failed.
phasekey::Result<Backend> OpenBackend(const ServiceFlags& f, const sigset_t& stop) {
  Backend b;
  auto url = Database(f, &b.embedded);
  if (!url) return url.error();
  b.store = std::make_unique<RideStore>(*url);
  if (auto s = MigrateWhenReachable(f, *b.store, stop); !s.ok()) {
    return phasekey::Status::FailedPrecondition("migrations: " + s.ToString());
  }
  auto charger = NewCharger(f);
  if (!charger) return charger.error();
  b.charger = std::move(*charger);
  b.metrics = phasekey::Metrics::Create();
  auto runner = OpenRunner(f, *url, b.charger.get(), b.metrics);
  if (!runner) return runner.error();
  b.runner = std::move(*runner);
  return b;
}

}  // namespace

int Serve(const ServiceFlags& f) {
  const sigset_t stop = phasekey::BlockStopSignals();
  const std::optional<phasekey::HostPort> listen = phasekey::ParseHostPort(f.listen, phasekey::PortZero::kAllowed);
  if (!listen) return Fail("--listen must be HOST:PORT, got " + f.listen);
  auto backend = OpenBackend(f, stop);
  if (!backend) return Fail(backend.error().message());
  auto tokens = backend->store->EnsureDemoUsers();
  if (!tokens) return Fail("demo users: " + tokens.error().ToString());
  phasekey::HttpHandlerOptions ho;
  ho.docs_url = kDocsUrl;
  phasekey::HttpHandler handler(ho, WithRideIdInBody(*backend->runner), backend->runner->flows());
  for (const auto& [path, flow] : {std::pair{"/rides", kFlowName}, std::pair{"/bookings", kBookingFlowName},
                                   std::pair{kRefundRoute, kRefundFlowName}}) {
    if (auto s = handler.Route("POST", path, flow); !s.ok()) return Fail(s.ToString());
  }
  phasekey::HttpServerOptions so;
  so.address = listen->host;
  so.port = listen->port;
  so.max_connections = static_cast<std::size_t>(f.max_connections);
  so.max_connections_per_address = static_cast<std::size_t>(f.max_connections_per_address);
  so.header_timeout = std::chrono::milliseconds(f.header_timeout_ms);
  so.authenticate = [&tokens](const phasekey::HttpRequest& req) -> std::optional<std::string> {
    const std::string* auth = req.headers.Find("Authorization");
    if (auth == nullptr || auth->rfind("Bearer ", 0) != 0) return std::nullopt;
    auto it = tokens->find(auth->substr(7));
    if (it == tokens->end()) return std::nullopt;
    return AccountOf(it->second);
  };
  auto inbox = OpenInbox(*backend->runner, backend->metrics);
  if (!inbox) return Fail("inbox: " + inbox.error().ToString());
  phasekey::WebhookEndpoint webhooks(WebhookOptions(), **inbox, phasekey::phases::ParseStripeEvent);
  so.plain_routes = Routes(backend->store.get(), &handler, backend->metrics, &webhooks);
  phasekey::HttpServer server(so, handler);
  if (auto s = server.Start(); !s.ok()) return Fail(s.ToString());
  std::printf("listening on %s\n", phasekey::FormatHostPort(listen->host, server.port()).c_str());
  std::fflush(stdout);
  phasekey::WaitForStopSignal(stop);
  server.Stop();
  return 0;
}

namespace {

// Sends a receipt for each send_ride_receipt job: here, records it.
class ReceiptSink final : public phasekey::JobSink {
 public:
  explicit ReceiptSink(RideStore* store) : store_(store) {}
  phasekey::Status Deliver(const std::vector<phasekey::StagedJob>& jobs) override {
    std::vector<nlohmann::json> receipts;
    for (const auto& j : jobs) {
      if (j.name != "send_ride_receipt") {
        std::fprintf(stderr, "ride_booking worker: no handler for job %lld (%s); dropped\n",
                     static_cast<long long>(j.id), j.name.c_str());
        continue;
      }
      nlohmann::json r = j.args;
      r["job_id"] = j.id;
      receipts.push_back(std::move(r));
    }
    return store_->InsertReceipts(receipts);
  }

 private:
  RideStore* store_;
};

}  // namespace

int RunWorker(const ServiceFlags& f) {
  const sigset_t stop = phasekey::BlockStopSignals();
  auto backend = OpenBackend(f, stop);
  if (!backend) return Fail(backend.error().message());
  const auto& metrics = backend->metrics;
  phasekey::WorkerSelection sel;
  sel.reaper_options.metrics = metrics;
  sel.reaper_options.interval = std::chrono::milliseconds(f.reap_interval_ms);
  const bool all = !f.redrive && !f.reap && !f.enqueue;
  sel.redrive = all || f.redrive;
  sel.reap = all || f.reap;
  sel.enqueue = all || f.enqueue;
  sel.redrive_options.concurrency = static_cast<std::size_t>(f.concurrency);
  sel.redrive_options.poll_interval = std::chrono::milliseconds(f.poll_ms);
  sel.enqueuer_options.poll_interval = std::chrono::milliseconds(f.poll_ms);
  sel.enqueuer_options.metrics = metrics;
  // /metrics and /healthz of the worker: a server of plain routes only.
  const std::optional<phasekey::HostPort> listen =
      phasekey::ParseHostPort(f.metrics_listen, phasekey::PortZero::kAllowed);
  if (!listen) return Fail("--metrics-listen must be HOST:PORT");
  auto metrics_server = phasekey::StartMetricsServer(*listen, metrics, phasekey::LivenessOf(sel));
  if (!metrics_server) return Fail("metrics server: " + metrics_server.error().ToString());
  std::printf("metrics on %s\n", phasekey::FormatHostPort(listen->host, (*metrics_server)->port()).c_str());
  std::fflush(stdout);
  ReceiptSink sink(backend->store.get());
  auto inbox = OpenInbox(*backend->runner, backend->metrics);
  if (!inbox) return Fail("inbox: " + inbox.error().ToString());
  const ParkedEventSweeper sweeper(inbox->get(), std::chrono::milliseconds(f.poll_ms));
  phasekey::Status s =
      phasekey::RunWorkersUntilSignal(backend->runner->options().database, sel, backend->runner.get(), &sink);
  return s.ok() ? 0 : Fail(s.ToString());
}

}  // namespace ride_booking
