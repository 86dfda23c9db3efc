#include "refund_flow.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>

#include "phasekey/phases/payment_outcome.h"
#include "ride_flow.h"

namespace ride_booking {
namespace {

using phasekey::AtomicContext;
using phasekey::PhaseContext;
using phasekey::PhaseResult;

phasekey::Response Problem(int status, const std::string& slug, const std::string& title, const std::string& detail) {
  return phasekey::ProblemJsonResponse(status, std::string(kDocsUrl) + "#" + slug, title, {{"detail", detail}});
}

// The ride named by the path, if it is a number.
std::optional<long long> RideIdOf(const PhaseContext& ctx) {
  const nlohmann::json& id = ctx.request().value("ride_id", nlohmann::json());
  if (!id.is_string() || id.get<std::string>().empty() || id.get<std::string>().size() > 18) return std::nullopt;
  const std::string text = id.get<std::string>();
  if (text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(text);
}

PhaseResult FindCharge(AtomicContext& ctx) {
  const std::optional<long long> user = UserOf(ctx.account());
  const std::optional<long long> ride = RideIdOf(ctx);
  if (!user) throw std::invalid_argument("not a ride_booking account: " + ctx.account());
  const pqxx::result rows =
      ride ? ctx.tx().exec_params("SELECT charge_id, refund_id FROM rides WHERE id = $1 AND user_id = $2", *ride, *user)
           : pqxx::result();
  if (rows.empty()) {
    return phasekey::Respond{Problem(404, "ride-not-found", "Ride Not Found", "You have no ride with this id.")};
  }
  if (rows[0][0].is_null()) {
    return phasekey::Respond{Problem(409, "ride-not-charged", "Ride Not Charged", "The ride has no charge to refund.")};
  }
  if (!rows[0][1].is_null()) {
    return phasekey::Respond{Problem(409, "ride-refunded", "Ride Already Refunded",
                                     "The ride was refunded as " + rows[0][1].as<std::string>() + ".")};
  }
  return phasekey::GoTo{kRideRefundable, {{"ride_id", *ride}, {"charge_id", rows[0][0].as<std::string>()}}};
}

phasekey::phases::RefundIntent Refund(const PhaseContext& ctx) {
  return {ctx.Outcome(kRideRefundable).at("charge_id").get<std::string>(), kRideAmount, kRideCurrency,
          "requested_by_customer"};
}

PhaseResult RecordRefund(AtomicContext& ctx) {
  const nlohmann::json& ride = ctx.Outcome(kRideRefundable);
  const std::string refund_id = phasekey::phases::RefundOutcome::At(ctx, kRefundCreated).refund_id;
  const long long ride_id = ride.at("ride_id").get<long long>();
  ctx.tx().exec_params0("UPDATE rides SET refund_id = $2 WHERE id = $1", ride_id, refund_id);
  return phasekey::Respond{phasekey::JsonResponse(
      200, {{"ride_id", ride_id}, {"charge_id", ride.at("charge_id")}, {"refund_id", refund_id}})};
}

}  // namespace

std::shared_ptr<const phasekey::Flow> MakeRefundFlow(const RideCharger& charger) {
  phasekey::Flow::Builder builder(kRefundFlowName);
  builder.Atomic(phasekey::kStarted, "find_charge", FindCharge, {kRideRefundable, phasekey::kFinished});
  charger.AddRefundPhase(builder, kRideRefundable, "refund", kRefundCreated, Refund);
  builder.Atomic(kRefundCreated, "record_refund", RecordRefund, {phasekey::kFinished});
  builder.Masked(MaskedFields());
  auto flow = builder.Build();
  if (!flow) throw std::logic_error(flow.error().ToString());
  return *flow;
}

phasekey::HttpHandler::Execute WithRideIdInBody(phasekey::Runner& runner) {
  return [&runner](const std::string& flow, const phasekey::Request& request) {
    const auto id = request.path_parameters.find("id");
    if (flow != kRefundFlowName || id == request.path_parameters.end()) return runner.Execute(flow, request);
    nlohmann::json body =
        request.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(request.body, nullptr, false);
    if (!body.is_object()) return runner.Execute(flow, request);
    body["ride_id"] = id->second;
    // A new body: any canonical form the request carried was of the old one.
    const phasekey::Request moved{request.account, request.idempotency_key, request.method,     request.path,
                                  body.dump(),     request.path_parameters, request.traceparent};
    return runner.Execute(flow, moved);
  };
}

}  // namespace ride_booking
