// WithRideIdInBody (examples/ride_booking/refund_flow.h): the body a refund
// request reaches the runner with, whose fingerprint every stored refund key
// holds.
#include "refund_flow.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "phasekey/fingerprint.h"
#include "ride_flow.h"

namespace ride_booking {
namespace {

// Records what reaches Runner::Execute.
class RecordingRunner final : public phasekey::Runner {
 public:
  RecordingRunner() : Runner(phasekey::RunnerOptions{}) {}
  phasekey::Reply Execute(const std::string& flow, const phasekey::Request& request) override {
    calls.emplace_back(flow, request);
    return {};
  }
  phasekey::Reply Resume(const phasekey::ClaimedKey&) override { return {}; }
  std::vector<std::shared_ptr<const phasekey::Flow>> flows() const override { return {}; }

  std::vector<std::pair<std::string, phasekey::Request>> calls;
};

phasekey::Request Refund(std::string id, std::string body) {
  phasekey::Request r{"user_1", "k-1", "POST", "/rides/" + id + "/refund", std::move(body)};
  r.path_parameters.emplace("id", std::move(id));
  return r;
}

std::string FingerprintOf(const std::string& body) {
  phasekey::Result<phasekey::Fingerprint> f = phasekey::FingerprintJson(body);
  return f ? f->sha256_hex : "<error: " + f.error().message() + ">";
}

TEST(WithRideIdInBodyTest, GivesTheRunnerTheBodyWhoseFingerprintStoredRefundKeysHold) {
  RecordingRunner runner;
  const auto execute = WithRideIdInBody(runner);
  execute(kRefundFlowName, Refund("42", ""));
  execute(kRefundFlowName, Refund("7", R"({"reason": "requested"})"));
  execute(kRefundFlowName, Refund("7", R"({"ride_id": "9", "reason": "requested"})"));  // the path's id wins
  ASSERT_EQ(runner.calls.size(), 3u);
  EXPECT_EQ(FingerprintOf(runner.calls[0].second.body),
            "17d2d7be3715121dd7b5b23f33471db72b2334ff99a4bccc9a8ef3c1b698a1b9");  // {"ride_id":"42"}
  EXPECT_EQ(
      FingerprintOf(runner.calls[1].second.body),
      "e07a1d6236d450f902ed11d577c32054c28ae2f15dab5976fd7582e6e8a53b09");  // {"reason":"requested","ride_id":"7"}
  EXPECT_EQ(FingerprintOf(runner.calls[2].second.body), FingerprintOf(runner.calls[1].second.body));
  for (const auto& [flow, request] : runner.calls) {
    EXPECT_EQ(flow, kRefundFlowName);
    EXPECT_EQ(request.idempotency_key, "k-1");
    EXPECT_EQ(request.path, "/rides/" + request.path_parameters.at("id") + "/refund");
  }
}

TEST(WithRideIdInBodyTest, DropsTheCanonicalBodyOfTheBodyItReplaced) {
  RecordingRunner runner;
  phasekey::Request refund = Refund("42", "{}");
  refund.canonical_body = *phasekey::CanonicalBody::Of("{}");
  WithRideIdInBody(runner)(kRefundFlowName, refund);
  ASSERT_EQ(runner.calls.size(), 1u);
  EXPECT_EQ(runner.calls[0].second.canonical_body, nullptr);  // else the runner would store {} without the id
  EXPECT_EQ(FingerprintOf(runner.calls[0].second.body), FingerprintOf(R"({"ride_id":"42"})"));
}

TEST(WithRideIdInBodyTest, PassesOtherFlowsAndNonObjectBodiesOnUntouched) {
  RecordingRunner runner;
  const auto execute = WithRideIdInBody(runner);
  phasekey::Request ride{"user_1", "k-2", "POST", "/rides", R"({"origin_lat": 1})"};
  ride.canonical_body = *phasekey::CanonicalBody::Of(ride.body);
  execute(kFlowName, ride);
  execute(kRefundFlowName, Refund("42", "[1]"));
  ASSERT_EQ(runner.calls.size(), 2u);
  EXPECT_EQ(runner.calls[0].second.body, ride.body);
  EXPECT_EQ(runner.calls[0].second.canonical_body, ride.canonical_body);
  EXPECT_EQ(runner.calls[1].second.body, "[1]");  // for the runner to refuse
}

}  // namespace
}  // namespace ride_booking
