// A two-phase flow against the installed phasekey: record a greeting
// (atomic), then "send" it (foreign), then answer. Run twice with one key:
// the second answer must be the stored first one. The key is fresh on every
// run, so the test can run again against the same DATABASE_URL. And the installed
// provider adapters: a Stripe charge carries the key where Stripe reads it. And
// the installed client: a named intent in a SQLite journal keeps its UUIDv7 key.
#include <cstdio>
#include <cstdlib>
#include <pqxx/pqxx>
#include <random>
#include <string>

#include "phasekey/client/client.h"
#include "phasekey/migrate.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/runner.h"
#include "phasekey/tools/embedded_postgres.h"

namespace {

constexpr phasekey::RecoveryPoint kRecorded{"recorded"};
int sends = 0;

phasekey::PhaseResult Record(phasekey::AtomicContext& ctx) {
  ctx.tx().exec0("CREATE TABLE IF NOT EXISTS greetings (account text, name text)");
  ctx.tx().exec_params0("INSERT INTO greetings VALUES ($1, $2)", ctx.account(), ctx.request().value("name", ""));
  return phasekey::GoTo{kRecorded};
}

phasekey::PhaseResult Send(const phasekey::PhaseContext& ctx) {
  ++sends;
  return phasekey::Respond{phasekey::JsonResponse(201, {{"hello", ctx.request().value("name", "")}})};
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "consumer: %s\n", what.c_str());
  return 1;
}

}  // namespace

// The key of a Stripe charge goes in its Idempotency-Key header.
bool StripeAdapterPlacesTheKey() {
  auto stripe = phasekey::phases::NewStripeV1Adapter();
  phasekey::phases::PaymentIntent intent;
  intent.amount_minor = 2000;
  intent.currency = "usd";
  intent.customer_or_source = "cus_1";
  intent.reference = "ride-1";
  auto request = stripe->BuildCharge(intent, "key-row-1:charge");
  if (!request) return false;
  const std::string* key = request->FindHeader("Idempotency-Key");
  return key != nullptr && *key == stripe->FitKey("key-row-1:charge");
}

// A named intent created twice (two clients on one journal file) has one key.
bool ClientKeepsItsKey(const std::string& journal_path) {
  std::remove(journal_path.c_str());
  const phasekey::client::Request request{"POST", "http://127.0.0.1:9/greet", {}, "{}"};
  std::string first;
  {
    phasekey::client::ClientOptions options;
    options.journal = phasekey::client::OpenSqliteJournal(journal_path);
    first = phasekey::client::Client(options).IntentNamed("greeting", request).key();
  }
  phasekey::client::ClientOptions options;
  options.journal = phasekey::client::OpenSqliteJournal(journal_path);
  phasekey::client::Client client(options);
  return first.size() == 36 && first[14] == '7' && client.IntentNamed("greeting", request).key() == first &&
         client.Unfinished().size() == 1;
}

int main(int argc, char** argv) {
  if (!StripeAdapterPlacesTheKey()) return Fail("the installed Stripe adapter did not place the key");
  if (!ClientKeepsItsKey(std::string(argc > 1 ? argv[1] : "consumer") + "-journal.db")) {
    return Fail("the installed client did not keep its intent's key");
  }
  std::unique_ptr<phasekey::EmbeddedPostgres> embedded;
  std::string url = std::getenv("DATABASE_URL") != nullptr ? std::getenv("DATABASE_URL") : "";
  if (url.empty()) {
    phasekey::EmbeddedPostgresOptions pg_options;
    pg_options.base_dir = argc > 1 ? argv[1] : "consumer-pg";
    auto pg = phasekey::EmbeddedPostgres::Start(pg_options);
    if (!pg) return Fail(pg.error().ToString());
    embedded = std::move(*pg);
    url = embedded->url();
  }
  if (auto m = phasekey::Migrate(url, phasekey::EngineMigrations()); !m) return Fail(m.error().ToString());
  auto flow = phasekey::Flow::Builder("greet")
                  .Atomic(phasekey::kStarted, "record", Record, {kRecorded})
                  .Foreign(kRecorded, "send", Send, {phasekey::kFinished}, std::chrono::seconds(1))
                  .Build();
  if (!flow) return Fail(flow.error().ToString());
  phasekey::RunnerOptions options;
  options.database.url = url;
  auto runner = phasekey::Runner::Open(options, {*flow});
  if (!runner) return Fail(runner.error().ToString());
  const phasekey::Request req{"consumer", "greeting-key-" + std::to_string(std::random_device{}()), "POST", "/greet",
                              R"({"name": "phasekey"})"};
  const phasekey::Reply first = (*runner)->Execute("greet", req);
  const phasekey::Reply second = (*runner)->Execute("greet", req);
  if (first.kind != phasekey::Reply::Kind::kCompleted || second.kind != phasekey::Reply::Kind::kReplayed ||
      first.response.body != second.response.body || sends != 1) {
    return Fail("unexpected answers: " + first.detail + " / " + second.detail);
  }
  std::printf("consumer: ok %d %s\n", first.response.status, first.response.body.c_str());
  return 0;
}
