// The top-up flow: POST /topups {"amount": 2500} puts 25.00 usd into the
// caller's wallet, paid by a charge of the card the gateway keeps for them.
//
//   started          record_topup    (atomic)  a pending top-up row
//   topup_recorded   charge          (foreign) the card charge, through the
//                                              phasekey::phases Stripe adapter
//   charged          credit_wallet   (atomic)  the wallet credited; 201
//   finished
//
// Every phase may run more than once (a crash, a retry, the re-drive
// worker); the engine makes each one's effect count once.
#ifndef WALLET_TOPUP_FLOW_H_
#define WALLET_TOPUP_FLOW_H_

#include <memory>

#include "phasekey/flow.h"
#include "phasekey/phases/http_client.h"
#include "phasekey/phases/provider_adapter.h"

namespace wallet {

inline constexpr phasekey::RecoveryPoint kTopupRecorded{"topup_recorded"};
inline constexpr phasekey::RecoveryPoint kCharged{"charged"};
inline constexpr char kTopupFlow[] = "topup";

// The largest top-up, in cents.
inline constexpr long long kMaxTopup = 100000;

// The flow, charging through `gateway` over `http`; both must outlive it.
std::shared_ptr<const phasekey::Flow> MakeTopupFlow(const phasekey::phases::ProviderAdapter& gateway,
                                                    const phasekey::phases::HttpClient& http);

}  // namespace wallet

#endif  // WALLET_TOPUP_FLOW_H_
