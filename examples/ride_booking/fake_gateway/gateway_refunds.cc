// Refunds for every dialect (ChargeDesk::Refund, gateway.h): a whole-payment
// refund, recorded durably in the ledger and idempotent under its key like a
// charge. Refunds are rare (an operator's action), so they run one at a time
// under refund_mu_, which makes "already refunded?" and the append one step.
#include <fmt/format.h>

#include <algorithm>

#include "fake_gateway/gateway.h"

namespace fake_gateway {

GatewayResponse Gateway::Refund(const Dialect& dialect, const ParsedRefund& refund) {
  std::lock_guard refund_lock(refund_mu_);
  const std::optional<std::string>& key = refund.key;
  if (key) {
    if (auto stored = Stored(*key)) {
      return stored->params == refund.canonical ? dialect.ReplayOf(*key, *stored) : dialect.Reused(*key, *stored);
    }
  }
  const std::optional<ChargeRecord> payment = ledger_->ChargeById(refund.payment_id);
  if (!payment) {
    return dialect.RefundRefused(RefundProblem::kUnknownPayment,
                                 fmt::format("No such payment: '{}'", refund.payment_id));
  }
  if (refund.amount && *refund.amount != payment->amount) {
    return dialect.RefundRefused(RefundProblem::kNotWhole,
                                 fmt::format("Only whole refunds: the payment is {} minor units.", payment->amount));
  }
  if (ledger_->Refunded(refund.payment_id)) {
    return dialect.RefundRefused(RefundProblem::kAlreadyRefunded,
                                 fmt::format("Payment {} has already been refunded.", refund.payment_id));
  }
  LedgerEntry entry;
  entry.key = key;
  entry.response.params = refund.canonical;
  entry.response.stored_at_ms = NowMs();
  entry.refund =
      RefundRecord{NewChargeId("re_"), refund.payment_id, payment->amount, entry.response.stored_at_ms / 1000};
  Answer answer = dialect.Refunded(*entry.refund, *payment);
  entry.response.status = answer.status;
  entry.response.body = std::move(answer.body);
  std::string error;
  if (!ledger_->Append(entry, &error)) return dialect.Failed("Ledger write failed: " + error);
  if (options_.on_recorded) options_.on_recorded(entry);
  GatewayResponse response = JsonResponse(entry.response.status, entry.response.body);
  // Stripe echoes the key it read; the other providers do not.
  if (key && dialect.name() == "stripe") response.headers.emplace_back("Idempotency-Key", *key);
  return response;
}

}  // namespace fake_gateway
