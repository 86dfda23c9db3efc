#include "support/ride_flow.h"

#include <fmt/format.h>

#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>

namespace phasekey::bench {

std::string BenchGateway::Charge(const std::string& provider_key) {
  (void)provider_key;
  if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
  return "ch_" + std::to_string(calls_.fetch_add(1) + 1);
}

std::string RideBody(std::int64_t seq) {
  const double lat = 37.0 + static_cast<double>(seq % 1000) / 1000.0;
  return fmt::format(R"({{"origin_lat":{:.3f},"origin_lon":-122.4,"target_lat":37.8,"target_lon":-122.27}})", lat);
}

void CreateRideTables(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::work tx(conn);
  tx.exec0(
      "CREATE TABLE IF NOT EXISTS rides (id bigserial PRIMARY KEY, account text NOT NULL, idem_key text NOT NULL, "
      "origin_lat double precision NOT NULL, charge_id text, UNIQUE (account, idem_key))");
  tx.exec0(
      "CREATE TABLE IF NOT EXISTS staged_jobs (id bigserial PRIMARY KEY, job_name text NOT NULL, "
      "job_args jsonb NOT NULL)");
  tx.commit();
}

namespace {

PhaseResult CreateRide(AtomicContext& ctx) {
  ctx.tx().exec_params0("INSERT INTO rides (account, idem_key, origin_lat) VALUES ($1, $2, $3)", ctx.account(),
                        ctx.idempotency_key(), ctx.request().value("origin_lat", 0.0));
  return GoTo{kRideCreated};
}

PhaseResult ChargeRide(const PhaseContext& ctx, BenchGateway* gateway) {
  if (gateway->unavailable.load()) return Retry("gateway unavailable");
  return GoTo{kChargeCreated, {{"charge_id", gateway->Charge(ctx.ProviderKey())}}};
}

PhaseResult SendReceipt(AtomicContext& ctx) {
  const std::string charge = ctx.Outcome(kChargeCreated).at("charge_id").get<std::string>();
  pqxx::row ride = ctx.tx().exec_params1(
      "UPDATE rides SET charge_id = $3 WHERE account = $1 AND idem_key = $2 RETURNING id", ctx.account(),
      ctx.idempotency_key(), charge);
  ctx.tx().exec_params0("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', $1::jsonb)",
                        nlohmann::json{{"account", ctx.account()}, {"charge_id", charge}}.dump());
  return Respond{JsonResponse(201, {{"ride_id", ride[0].as<long long>()}, {"charge_id", charge}})};
}

std::shared_ptr<const Flow> Built(Result<std::shared_ptr<const Flow>> flow) {
  if (!flow) throw std::runtime_error(flow.error().ToString());
  return *flow;
}

}  // namespace

std::shared_ptr<const Flow> MakeRideFlow(BenchGateway* gateway) {
  return Built(Flow::Builder("create_ride")
                   .Atomic(kStarted, "create_ride", CreateRide, {kRideCreated})
                   .Foreign(kRideCreated, "charge", [gateway](const PhaseContext& c) { return ChargeRide(c, gateway); },
                            {kChargeCreated}, std::chrono::seconds(10))
                   .Atomic(kChargeCreated, "send_receipt", SendReceipt, {kFinished})
                   .Build());
}

std::shared_ptr<const Flow> MakeRecordFlow() {
  return Built(Flow::Builder("record")
                   .Atomic(kStarted, "record",
                           [](AtomicContext&) -> PhaseResult { return Respond{JsonResponse(201, {{"ok", true}})}; },
                           {kFinished})
                   .Build());
}

std::shared_ptr<const Flow> MakeChargeOnlyFlow(BenchGateway* gateway) {
  return Built(Flow::Builder("charge_only")
                   .Foreign(
                       kStarted, "charge",
                       [gateway](const PhaseContext& c) -> PhaseResult {
                         return Respond{JsonResponse(201, {{"charge_id", gateway->Charge(c.ProviderKey())}})};
                       },
                       {kFinished}, std::chrono::seconds(10))
                   .Build());
}

}  // namespace phasekey::bench
