#include "ride_flow.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <stdexcept>

#include "phasekey/phases/payment_outcome.h"
#include "phasekey/staged_job.h"

namespace ride_booking {
namespace {

using phasekey::AtomicContext;
using phasekey::PhaseContext;
using phasekey::PhaseResult;

long long UserId(const PhaseContext& ctx) {
  auto user = UserOf(ctx.account());
  if (!user) throw std::invalid_argument("not a ride_booking account: " + ctx.account());
  return *user;
}

// `body` with the MaskedFields() it has shown as "***", for the audit
// record, which keeps the request as sent.
nlohmann::json Masked(nlohmann::json body) {
  for (const std::string& field : MaskedFields()) {
    const nlohmann::json::json_pointer pointer(field);
    if (body.contains(pointer)) body[pointer] = "***";
  }
  return body;
}

// The ride and its audit record in one statement that needs no answer: it
// travels with the key's move and COMMIT, so creating a ride costs the
// claim's round trip and one more.
PhaseResult CreateRide(AtomicContext& ctx) {
  const auto& p = ctx.request();
  ctx.ExecAtCommit(
      "WITH ride AS ("
      "  INSERT INTO rides (user_id, idempotency_key, origin_lat, origin_lon, target_lat, target_lon) "
      "  VALUES ($1, $2, $3, $4, $5, $6) RETURNING id) "
      "INSERT INTO audit_records (action, data, resource_id, resource_type, user_id) "
      "SELECT 'ride.created', $7::jsonb, ride.id, 'ride', $1::bigint FROM ride",
      UserId(ctx), ctx.idempotency_key(), p["origin_lat"].get<double>(), p["origin_lon"].get<double>(),
      p["target_lat"].get<double>(), p["target_lon"].get<double>(), Masked(p).dump());
  return phasekey::GoTo{kRideCreated};
}

long long RideId(AtomicContext* ctx, const PhaseContext& pc) {
  return ctx->tx()
      .exec_params1("SELECT id FROM rides WHERE user_id = $1 AND idempotency_key = $2", UserId(pc),
                    pc.idempotency_key())[0]
      .as<long long>();
}

PhaseResult SendReceipt(AtomicContext& ctx) {
  const std::string charge_id = phasekey::phases::ChargeOutcome::At(ctx, kChargeCreated).payment_id;
  const long long ride_id = RideId(&ctx, ctx);
  ctx.ExecAtCommit("UPDATE rides SET charge_id = $2 WHERE id = $1", ride_id, charge_id);
  phasekey::StageJob(ctx, "send_ride_receipt",
                     {{"user_id", UserId(ctx)},
                      {"ride_id", ride_id},
                      {"charge_id", charge_id},
                      {"amount", kRideAmount},
                      {"currency", kRideCurrency}});
  return phasekey::Respond{phasekey::JsonResponse(
      201,
      {{"ride_id", ride_id}, {"charge_id", charge_id}, {"message", "Payment accepted. Your pilot is on their way!"}})};
}

}  // namespace

std::vector<std::string> MaskedFields() { return {"/card/number", "/card/cvc", "/iban"}; }

std::string AccountOf(long long user_id) { return "user_" + std::to_string(user_id); }

std::optional<long long> UserOf(const std::string& account) {
  if (account.rfind("user_", 0) != 0 || account.size() == 5) return std::nullopt;
  try {
    std::size_t used = 0;
    long long id = std::stoll(account.substr(5), &used);
    if (used != account.size() - 5) return std::nullopt;
    return id;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string InvalidRideParams(const nlohmann::json& p) {
  if (!p.is_object()) return "the body must be a JSON object";
  for (const char* name : {"origin_lat", "origin_lon", "target_lat", "target_lon"}) {
    if (!p.contains(name)) return std::string("missing parameter ") + name;
    if (!p[name].is_number()) return std::string(name) + " must be a number";
    const double v = p[name].get<double>();
    const double limit = std::string(name).ends_with("_lat") ? 90 : 180;
    if (v < -limit || v > limit) {
      return std::string(name) + " must be within ±" + std::to_string(static_cast<int>(limit));
    }
  }
  return "";
}

namespace {

std::shared_ptr<const phasekey::Flow> BuildRideFlow(const RideCharger& charger, const char* name,
                                                    phasekey::KeySource key) {
  phasekey::Flow::Builder builder(name);
  builder.KeyFrom(std::move(key));
  builder.Atomic(phasekey::kStarted, "create_ride", CreateRide, {kRideCreated});
  charger.AddChargePhase(builder, kRideCreated, "charge", kChargeCreated, kRideAmount, kRideCurrency);
  builder.Atomic(kChargeCreated, "send_receipt", SendReceipt, {phasekey::kFinished});
  builder.Masked(MaskedFields());
  auto flow = builder.Build();
  if (!flow) throw std::logic_error(flow.error().ToString());
  return *flow;
}

}  // namespace

std::shared_ptr<const phasekey::Flow> MakeRideFlow(const RideCharger& charger) {
  return BuildRideFlow(charger, kFlowName, phasekey::KeySource::Header());
}

std::shared_ptr<const phasekey::Flow> MakeBookingFlow(const RideCharger& charger) {
  return BuildRideFlow(charger, kBookingFlowName, phasekey::KeySource::BodyField(kBookingReference));
}

}  // namespace ride_booking
