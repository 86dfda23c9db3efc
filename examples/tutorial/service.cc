#include "service.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <span>
#include <string>

#include "phasekey/http.h"
#include "phasekey/migrate.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/runner.h"
#include "phasekey/tools/embedded_postgres.h"
#include "phasekey/tools/host_port.h"
#include "phasekey/tools/http_server.h"
#include "phasekey/tools/stop_signals.h"
#include "phasekey/tools/worker_group.h"
#include "topup_flow.h"

namespace wallet {

// sql/0001_wallets.sql, compiled in by phasekey_embed_sql (CMakeLists.txt).
extern const phasekey::SqlFile kWalletMigrations[];
extern const std::size_t kWalletMigrations_count;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "wallet: %s\n", what.c_str());
  return 1;
}

// What `serve` and `worker` both stand on. Members are destroyed in reverse
// order: the runner before the gateway its flow charges through, the
// embedded server (if any) last.
struct Backend {
  std::unique_ptr<phasekey::EmbeddedPostgres> embedded;
  std::string database_url;
  std::unique_ptr<phasekey::phases::ProviderAdapter> gateway;
  std::unique_ptr<phasekey::phases::HttpClient> http;
  std::unique_ptr<phasekey::Runner> runner;
};

// --database-url, $DATABASE_URL, or the embedded server of --pg-dir.
phasekey::Status FindDatabase(const Options& o, Backend* b) {
  b->database_url = o.database_url;
  if (const char* env = std::getenv("DATABASE_URL"); b->database_url.empty() && env != nullptr) {
    b->database_url = env;
  }
  if (!b->database_url.empty()) return phasekey::Status::OK();
  phasekey::EmbeddedPostgresOptions pg;
  pg.base_dir = o.pg_dir;
  pg.attach_to_running = true;
  auto server = phasekey::EmbeddedPostgres::Start(pg);
  if (!server) return server.error();
  b->embedded = std::move(*server);
  b->database_url = b->embedded->url();
  return phasekey::Status::OK();
}

// The database migrated (phasekey's schema, then ours), the gateway, and a
// runner serving the top-up flow.
phasekey::Result<Backend> OpenBackend(const Options& o) {
  Backend b;
  if (auto s = FindDatabase(o, &b); !s.ok()) return s;
  if (auto m = phasekey::Migrate(b.database_url, phasekey::EngineMigrations()); !m) return m.error();
  auto ours = phasekey::MigrationSetFromFiles("wallet", std::span(kWalletMigrations, kWalletMigrations_count));
  if (!ours) return ours.error();
  if (auto m = phasekey::Migrate(b.database_url, *ours); !m) return m.error();

  phasekey::phases::StripeOptions stripe;
  stripe.base_url = o.gateway_url;
  b.gateway = phasekey::phases::NewStripeV1Adapter(stripe);
  b.http = phasekey::phases::NewBeastHttpClient();

  phasekey::RunnerOptions runner_options;
  runner_options.database.url = b.database_url;
  auto runner = phasekey::Runner::Open(runner_options, {MakeTopupFlow(*b.gateway, *b.http)});
  if (!runner) return runner.error();
  b.runner = std::move(*runner);
  return b;
}

// "Authorization: Bearer tok_<account>" acts for <account>. A real service
// checks a real credential here.
std::optional<std::string> Authenticate(const phasekey::HttpRequest& req) {
  const std::string* auth = req.headers.Find("Authorization");
  if (auth == nullptr || auth->rfind("Bearer tok_", 0) != 0 || auth->size() == 11) return std::nullopt;
  return auth->substr(11);
}

// GET /wallet: the caller's balance. Every other request goes on to the
// idempotent routes.
phasekey::PlainRoutes WalletRoute(const std::string& database_url) {
  return [database_url](const phasekey::HttpRequest& req,
                        const std::string* account) -> std::optional<phasekey::Response> {
    if (req.method != "GET" || req.target != "/wallet" || account == nullptr) return std::nullopt;
    pqxx::connection db(database_url);
    pqxx::read_transaction tx(db);
    const pqxx::result r = tx.exec_params("SELECT balance FROM wallets WHERE account = $1", *account);
    const long long balance = r.empty() ? 0 : r[0][0].as<long long>();
    phasekey::Response response;
    response.headers.Add("Content-Type", "application/json");
    response.body = nlohmann::json{{"account", *account}, {"balance", balance}}.dump();
    return response;
  };
}

}  // namespace

int Serve(const Options& o) {
  const sigset_t stop = phasekey::BlockStopSignals();  // before any thread starts
  phasekey::HttpServerOptions server_options;
  const std::optional<phasekey::HostPort> listen = phasekey::ParseHostPort(o.listen, phasekey::PortZero::kAllowed);
  if (!listen) return Fail("--listen must be HOST:PORT, got " + o.listen);
  server_options.address = listen->host;
  server_options.port = listen->port;
  auto backend = OpenBackend(o);
  if (!backend) return Fail(backend.error().ToString());

  phasekey::HttpHandler handler(phasekey::HttpHandlerOptions{}, *backend->runner);
  if (auto s = handler.Route("POST", "/topups", kTopupFlow); !s.ok()) return Fail(s.ToString());
  server_options.authenticate = Authenticate;
  server_options.plain_routes = WalletRoute(backend->database_url);
  phasekey::HttpServer server(server_options, handler);
  if (auto s = server.Start(); !s.ok()) return Fail(s.ToString());
  std::printf("listening on %s\n", phasekey::FormatHostPort(listen->host, server.port()).c_str());
  std::fflush(stdout);

  phasekey::WaitForStopSignal(stop);
  server.Stop();
  return 0;
}

int Work(const Options& o) {
  phasekey::BlockStopSignals();  // RunWorkersUntilSignal waits for them
  auto backend = OpenBackend(o);
  if (!backend) return Fail(backend.error().ToString());
  phasekey::WorkerSelection workers;  // re-drive and reaper
  workers.enqueue = false;            // the flow stages no jobs
  std::printf("worker running\n");
  std::fflush(stdout);
  const phasekey::Status s = phasekey::RunWorkersUntilSignal(backend->runner->options().database, workers,
                                                             backend->runner.get(), /*sink=*/nullptr);
  return s.ok() ? 0 : Fail(s.ToString());
}

}  // namespace wallet
