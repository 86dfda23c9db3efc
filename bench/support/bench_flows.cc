#include "support/bench_flows.h"

#include <fmt/format.h>

#include <stdexcept>

namespace phasekey::bench {
namespace {

std::shared_ptr<const Flow> Built(Result<std::shared_ptr<const Flow>> flow) {
  if (!flow) throw std::runtime_error(flow.error().ToString());
  return *flow;
}

}  // namespace

std::shared_ptr<const Flow> MakeRideFlow(TestGateway* gateway) {
  return testing::MakeRideFlow(gateway, kChargeTimeout);
}

std::string RideBody(std::int64_t seq) {
  const double lat = 37.0 + static_cast<double>(seq % 1000) / 1000.0;
  return fmt::format(R"({{"origin_lat":{:.3f},"origin_lon":-122.4,"target_lat":37.8,"target_lon":-122.27}})", lat);
}

std::shared_ptr<const Flow> MakeRecordFlow() {
  return Built(Flow::Builder("record")
                   .Atomic(kStarted, "record",
                           [](AtomicContext&) -> PhaseResult {
                             return Respond{JsonResponse(201, {{"ok", true}})};
                           },
                           {kFinished})
                   .Build());
}

std::shared_ptr<const Flow> MakeChargeOnlyFlow(TestGateway* gateway) {
  return Built(Flow::Builder("charge_only")
                   .Foreign(
                       kStarted, "charge",
                       [gateway](const PhaseContext& c) -> PhaseResult {
                         return Respond{JsonResponse(201, {{"charge_id", gateway->Charge(c.ProviderKey())}})};
                       },
                       {kFinished}, kChargeTimeout)
                   .Build());
}

}  // namespace phasekey::bench
