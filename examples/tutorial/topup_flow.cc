#include "topup_flow.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>

#include "phasekey/phases/charge_phase.h"
#include "phasekey/phases/payment_outcome.h"

namespace wallet {
namespace {

using phasekey::AtomicContext;
using phasekey::PhaseContext;
using phasekey::PhaseResult;

// The request's amount in cents, or nullopt when it is not a whole number
// from 1 to kMaxTopup.
std::optional<long long> Amount(const PhaseContext& ctx) {
  const nlohmann::json& body = ctx.request();
  if (!body.is_object() || !body.contains("amount") || !body["amount"].is_number_integer()) return std::nullopt;
  const long long amount = body["amount"].get<long long>();
  if (amount < 1 || amount > kMaxTopup) return std::nullopt;
  return amount;
}

// Phase 1, atomic: a pending top-up. It runs inside the engine's
// transaction, which also moves the key to topup_recorded: both commit, or
// neither does. The phase needs nothing back from its INSERT, so it queues
// it with ExecAtCommit: it travels in the one message that carries the
// key's move and COMMIT, with no round trip of its own.
PhaseResult RecordTopup(AtomicContext& ctx) {
  const std::optional<long long> amount = Amount(ctx);
  if (!amount) {
    return phasekey::Terminal(
        phasekey::JsonResponse(422, {{"error", "amount must be a whole number of cents from 1 to 100000"}}),
        "invalid amount");
  }
  ctx.ExecAtCommit("INSERT INTO topups (account, idempotency_key, amount) VALUES ($1, $2, $3)", ctx.account(),
                   ctx.idempotency_key(), *amount);
  return phasekey::GoTo{kTopupRecorded};
}

// Phase 2, foreign: what to charge. phasekey::phases::ChargeWith sends it
// with a key derived from ctx.ProviderKey(), so a repeated run is
// recognised by the gateway (or found by its lookup) and charges once.
phasekey::phases::PaymentIntent ChargeFor(const PhaseContext& ctx) {
  phasekey::phases::PaymentIntent intent;
  intent.amount_minor = *Amount(ctx);
  intent.currency = "usd";
  intent.customer_or_source = ctx.account();  // the gateway's customer id
  intent.description = "Wallet top-up " + ctx.idempotency_key();
  intent.reference = ctx.idempotency_key();
  return intent;
}

// Phase 3, atomic: the charge went through; credit the wallet and answer.
// The response is stored with the key and replayed to every retry.
PhaseResult CreditWallet(AtomicContext& ctx) {
  const std::string charge_id = phasekey::phases::ChargeOutcome::At(ctx, kCharged).payment_id;
  const pqxx::row topup = ctx.tx().exec_params1(
      "UPDATE topups SET state = 'credited', charge_id = $3 "
      "WHERE account = $1 AND idempotency_key = $2 RETURNING id, amount",
      ctx.account(), ctx.idempotency_key(), charge_id);
  const pqxx::row wallet = ctx.tx().exec_params1(
      "INSERT INTO wallets (account, balance) VALUES ($1, $2) "
      "ON CONFLICT (account) DO UPDATE SET balance = wallets.balance + EXCLUDED.balance RETURNING balance",
      ctx.account(), topup[1].as<long long>());
  return phasekey::Respond{phasekey::JsonResponse(201, {{"topup_id", topup[0].as<long long>()},
                                                        {"charge_id", charge_id},
                                                        {"amount", topup[1].as<long long>()},
                                                        {"balance", wallet[0].as<long long>()}})};
}

}  // namespace

std::shared_ptr<const phasekey::Flow> MakeTopupFlow(const phasekey::phases::ProviderAdapter& gateway,
                                                    const phasekey::phases::HttpClient& http) {
  phasekey::Flow::Builder builder(kTopupFlow);
  builder.Atomic(phasekey::kStarted, "record_topup", RecordTopup, {kTopupRecorded});
  phasekey::phases::AddCharge(builder, kTopupRecorded, "charge", gateway, http, ChargeFor, kCharged);
  builder.Atomic(kCharged, "credit_wallet", CreditWallet, {phasekey::kFinished});
  auto flow = builder.Build();
  if (!flow) throw std::logic_error(flow.error().ToString());  // a bug in the graph above
  return *flow;
}

}  // namespace wallet
