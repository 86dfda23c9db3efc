// `ride_booking check-deploy`: the deploy gate (phasekey/deploy_gate.h) on
// the example's own flows, run as a deploy script runs it, against a real
// PostgreSQL; and `ride_booking flows describe`, which exports those flows
// for `phasekey flows check --flows` elsewhere.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>

#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

std::pair<int, std::string> RunRideBooking(const std::string& args) {
  FILE* p = ::popen((std::string(RIDE_BOOKING_PATH) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class CheckDeployTest : public ::testing::Test {
 protected:
  // A key row of `flow` at `point` in `state` (not finished).
  void Insert(const std::string& key, const std::string& flow, const std::string& point,
              const std::string& state = "active") {
    db_.Exec(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method,"
        " request_path, request_body, request_fingerprint, recovery_point, state) VALUES ('acct', '" +
        key + "', " + std::to_string(AccountBucket("acct", 16)) + ", '" + flow +
        "', 'POST', '/rides', '{}', decode(repeat('00', 32), 'hex'), '" + point + "', '" + state + "')");
  }
  std::pair<int, std::string> CheckDeploy() {
    return RunRideBooking("check-deploy --database-url '" + db_.url() + "'");
  }

  TestDatabase db_;
};

TEST_F(CheckDeployTest, ExitsOneListingFlowPointAndCountOfKeysTheBinaryWouldStrand) {
  Insert("at-known-point", "create_ride", "ride_created");
  Insert("old-1", "create_ride", "ride_charged_v0");
  Insert("gone-1", "book_ride", "gone_point");
  Insert("gone-2", "book_ride", "gone_point");
  Insert("dead-gone", "create_ride", "gone_point", "dead");
  Insert("another-apps", "legacy_flow", "gone_point");
  auto [code, out] = CheckDeploy();
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("flow book_ride point gone_point: 2 keys (longest wait "), std::string::npos) << out;
  EXPECT_NE(out.find("flow create_ride point ride_charged_v0: 1 keys (longest wait "), std::string::npos) << out;
  EXPECT_EQ(out.find("ride_created"), std::string::npos) << out;
  EXPECT_EQ(out.find("legacy_flow"), std::string::npos) << "another binary's flow is not this gate's: " << out;
  EXPECT_EQ(out.find("create_ride point gone_point"), std::string::npos) << "a dead key waits for nobody: " << out;

  db_.Exec("DELETE FROM phasekey.idempotency_keys WHERE idempotency_key IN ('old-1', 'gone-1', 'gone-2')");
  std::tie(code, out) = CheckDeploy();
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "no key would be stranded (3 flows checked)\n");
}

TEST_F(CheckDeployTest, FailsInOneLineWithoutADatabase) {
  auto [code, out] = RunRideBooking("check-deploy --database-url 'postgresql://nobody@127.0.0.1:1/none'");
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST(RideBookingFlowsDescribeTest, ExportsEveryFlowOfTheBinaryWithItsPoints) {
  auto [code, out] = RunRideBooking("flows describe");
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json flows = nlohmann::json::parse(out);
  std::set<std::string> names;
  for (const auto& f : flows) names.insert(f["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"create_ride", "book_ride", "refund_ride"}));
  const nlohmann::json points = flows[0]["points"];
  EXPECT_NE(std::find(points.begin(), points.end(), "ride_created"), points.end()) << flows[0].dump();
  EXPECT_NE(std::find(points.begin(), points.end(), "finished"), points.end()) << flows[0].dump();
}

}  // namespace
}  // namespace phasekey
