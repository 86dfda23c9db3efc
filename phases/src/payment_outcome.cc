#include "phasekey/phases/payment_outcome.h"

#include <stdexcept>

namespace phasekey::phases {
namespace {

// The outcome recorded at `reached`, which must be an object with a string
// member `id_member`.
const nlohmann::json& Recorded(const PhaseContext& ctx, RecoveryPoint reached, const char* what,
                               const char* id_member) {
  const nlohmann::json& o = ctx.Outcome(reached);
  if (!o.is_object() || !o.contains(id_member) || !o[id_member].is_string()) {
    throw std::invalid_argument("no " + std::string(what) + " outcome recorded at " + std::string(reached.name()));
  }
  return o;
}

std::string Text(const nlohmann::json& o, const char* member) {
  const auto it = o.find(member);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

nlohmann::json ChargeOutcome::ToJson() const {
  return {{"provider", provider},
          {"payment_id", payment_id},
          {"status", status},
          {"reference", reference},
          {"reconciled", reconciled}};
}

ChargeOutcome ChargeOutcome::At(const PhaseContext& ctx, RecoveryPoint reached) {
  // Keys in flight across an upgrade from 0.3: the ride example's old Stripe
  // client recorded a successful charge as {"charge_id": "ch_..."} alone.
  const nlohmann::json& legacy = ctx.Outcome(reached);
  if (legacy.is_object() && !legacy.contains("payment_id") && legacy.contains("charge_id") &&
      legacy["charge_id"].is_string()) {
    return {"stripe_v1", legacy["charge_id"].get<std::string>(), "succeeded", "", false};
  }
  const nlohmann::json& o = Recorded(ctx, reached, "charge", "payment_id");
  return {Text(o, "provider"), Text(o, "payment_id"), Text(o, "status"), Text(o, "reference"),
          o.value("reconciled", false)};
}

nlohmann::json RefundOutcome::ToJson() const {
  return {{"provider", provider}, {"refund_id", refund_id}, {"status", status}};
}

RefundOutcome RefundOutcome::At(const PhaseContext& ctx, RecoveryPoint reached) {
  const nlohmann::json& o = Recorded(ctx, reached, "refund", "refund_id");
  return {Text(o, "provider"), Text(o, "refund_id"), Text(o, "status")};
}

}  // namespace phasekey::phases
