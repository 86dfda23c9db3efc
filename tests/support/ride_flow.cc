#include "support/ride_flow.h"

#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>

namespace phasekey::testing {

std::string TestGateway::Charge(const std::string& provider_key) {
  ++calls_;
  if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
  std::lock_guard lock(mu_);
  auto [it, inserted] = charges_.emplace(provider_key, "");
  if (inserted) it->second = "ch_" + std::to_string(charges_.size());
  return it->second;
}

void TestGateway::set_before_call(std::function<void()> hook) {
  auto next = hook ? std::make_shared<const std::function<void()>>(std::move(hook)) : nullptr;
  std::lock_guard lock(mu_);
  before_call_ = std::move(next);
}

void TestGateway::RunBeforeCall() const {
  std::shared_ptr<const std::function<void()>> hook;
  {
    std::lock_guard lock(mu_);
    hook = before_call_;
  }
  if (hook) (*hook)();
}

int TestGateway::charges() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(charges_.size());
}

std::set<std::string> TestGateway::keys() const {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const auto& [k, v] : charges_) out.insert(k);
  return out;
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

PhaseResult CreateRide(AtomicContext& ctx, const RideHooks* hooks) {
  if (hooks != nullptr && hooks->in_create_ride) hooks->in_create_ride(ctx);
  ctx.ExecAtCommit("INSERT INTO rides (account, idem_key, origin_lat) VALUES ($1, $2, $3)", ctx.account(),
                   ctx.idempotency_key(), ctx.request().value("origin_lat", 0.0));
  return GoTo{kRideCreated};
}

PhaseResult ChargeRide(const PhaseContext& ctx, TestGateway* gw) {
  gw->RunBeforeCall();
  if (gw->unavailable.load()) return Retry("gateway unavailable");
  if (gw->throw_next.load() > 0 && gw->throw_next.fetch_sub(1) > 0) throw std::runtime_error("gateway client bug");
  if (gw->fail_retryable.load() > 0 && gw->fail_retryable.fetch_sub(1) > 0) return Retry("gateway unavailable");
  if (gw->decline) {
    return Terminal(JsonResponse(402, {{"error", "card declined"}}), "card declined");
  }
  const std::string charge = gw->Charge(ctx.ProviderKey());
  if (gw->fail_unknown.load() > 0 && gw->fail_unknown.fetch_sub(1) > 0) return OutcomeUnknown("read timeout");
  return GoTo{kChargeCreated, {{"charge_id", charge}}};
}

PhaseResult SendReceipt(AtomicContext& ctx, const RideHooks* hooks) {
  if (hooks != nullptr && hooks->in_send_receipt) hooks->in_send_receipt(ctx);
  const std::string charge = ctx.Outcome(kChargeCreated).at("charge_id").get<std::string>();
  pqxx::row ride =
      ctx.tx().exec_params1("UPDATE rides SET charge_id = $3 WHERE account = $1 AND idem_key = $2 RETURNING id",
                            ctx.account(), ctx.idempotency_key(), charge);
  ctx.ExecAtCommit("INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', $1::jsonb)",
                   nlohmann::json{{"account", ctx.account()}, {"charge_id", charge}}.dump());
  return Respond{JsonResponse(201, {{"ride_id", ride[0].as<long long>()}, {"charge_id", charge}})};
}

}  // namespace

std::shared_ptr<const Flow> MakeRideFlow(TestGateway* gateway, std::chrono::milliseconds charge_timeout,
                                         std::shared_ptr<RideHooks> hooks, const std::string& name, KeySource key) {
  auto flow = Flow::Builder(name)
                  .KeyFrom(std::move(key))
                  .Atomic(kStarted, "create_ride", [hooks](AtomicContext& c) { return CreateRide(c, hooks.get()); },
                          {kRideCreated})
                  .Foreign(
                      kRideCreated, "charge", [gateway](const PhaseContext& c) { return ChargeRide(c, gateway); },
                      {kChargeCreated}, charge_timeout)
                  .Atomic(kChargeCreated, "send_receipt",
                          [hooks](AtomicContext& c) { return SendReceipt(c, hooks.get()); }, {kFinished})
                  .Build();
  if (!flow) throw std::runtime_error(flow.error().ToString());
  return *flow;
}

std::shared_ptr<const Flow> MakeRideFlow(TestGateway* gateway, std::chrono::milliseconds charge_timeout) {
  return MakeRideFlow(gateway, charge_timeout, nullptr);
}

}  // namespace phasekey::testing
