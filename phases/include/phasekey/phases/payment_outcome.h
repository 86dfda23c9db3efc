// The outcomes the ready payment phases record, as types.
//
// ChargeWith (charge_phase.h) moves on with a ChargeOutcome, RefundWith
// (refund_phase.h) with a RefundOutcome; each is stored as the outcome of the
// move (a JSON object, below) and read back by later phases with At(ctx,
// point), so a later phase never looks at member names, whichever provider
// ran. The JSON names are fixed: outcomes of keys in flight were stored with
// them.
#ifndef PHASEKEY_PHASES_PAYMENT_OUTCOME_H_
#define PHASEKEY_PHASES_PAYMENT_OUTCOME_H_

#include <nlohmann/json.hpp>
#include <string>

#include "phasekey/flow.h"

namespace phasekey::phases {

// JSON {"provider", "payment_id", "status", "reference", "reconciled"}.
struct ChargeOutcome {
  std::string provider;     // the adapter's name: "stripe_v1", "adyen", ...
  std::string payment_id;   // the gateway's id of the payment
  std::string status;       // the gateway's own status word, when it gave one
  std::string reference;    // the merchant reference (ProviderAdapter::ReferenceFor)
  bool reconciled = false;  // found by the status query rather than answered to this run's charge

  // The JSON object above, as the charge phase records it with its move.
  nlohmann::json ToJson() const;
  // The charge outcome recorded with the move to `reached`. Throws
  // std::invalid_argument when that outcome is not one (the flow reads the
  // wrong point): an unclassified failure to the engine.
  static ChargeOutcome At(const PhaseContext& ctx, RecoveryPoint reached);
};

// JSON {"provider", "refund_id", "status"}.
struct RefundOutcome {
  std::string provider;   // the adapter's name
  std::string refund_id;  // the gateway's id of the refund
  std::string status;     // the gateway's own status word, when it gave one

  // The JSON object above, as the refund phase records it with its move.
  nlohmann::json ToJson() const;
  // As ChargeOutcome::At, for the move a refund phase made.
  static RefundOutcome At(const PhaseContext& ctx, RecoveryPoint reached);
};

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_PAYMENT_OUTCOME_H_
