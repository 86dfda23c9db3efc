// fake_gateway's operations journal (examples/ride_booking/fake_gateway/
// operations.h): every charge request's fate, with its provider key, in
// <data_dir>/operations.jsonl, for a chaos run's history.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_gateway/gateway.h"

namespace fake_gateway {
namespace {

using nlohmann::json;

constexpr char kRide[] = "amount=2000&currency=usd&customer=7&description=ride+1";
constexpr char kOtherRide[] = "amount=2500&currency=usd&customer=7&description=ride+1";

class OperationJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "operations_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Gateway> Open(Faults faults = {}) {
    GatewayOptions options;
    options.data_dir = dir_;
    options.faults = faults;
    options.seed = 42;
    std::string error;
    std::unique_ptr<Gateway> gateway = Gateway::Open(std::move(options), &error);
    EXPECT_NE(gateway, nullptr) << error;
    return gateway;
  }

  static GatewayResponse Charge(Gateway& gateway, std::string_view key, std::string_view body) {
    return gateway.Handle(
        "POST", "/v1/charges",
        {{"Content-Type", "application/x-www-form-urlencoded"}, {"Idempotency-Key", std::string(key)}}, body);
  }

  std::vector<json> Journal() const {
    std::ifstream in(dir_ / "operations.jsonl");
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
    return lines;
  }

  std::filesystem::path dir_;
};

TEST_F(OperationJournalTest, RecordsAnExecutionAReplayAndAReuseWithTheirKeys) {
  auto gateway = Open();
  const GatewayResponse charged = Charge(*gateway, "k1", kRide);
  ASSERT_EQ(charged.status, 200);
  ASSERT_EQ(Charge(*gateway, "k1", kRide).status, 200);
  ASSERT_EQ(Charge(*gateway, "k1", kOtherRide).status, 400);
  const std::vector<json> ops = Journal();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0]["op"], "executed");
  EXPECT_EQ(ops[0]["key"], "k1");
  EXPECT_EQ(ops[0]["charge_id"], json::parse(charged.body)["id"]);
  EXPECT_EQ(ops[0]["dropped"], false);
  EXPECT_EQ(ops[1]["op"], "replayed");
  EXPECT_EQ(ops[1]["charge_id"], nullptr);
  EXPECT_EQ(ops[2]["op"], "reused");
  EXPECT_EQ(ops[2]["status"], 400);
  for (const json& op : ops) EXPECT_GT(op["at_ms"].get<long long>(), 0);
}

TEST_F(OperationJournalTest, RecordsAnInjectedFailureAndADroppedAnswer) {
  auto gateway = Open({.fail_rate = 1.0});
  ASSERT_EQ(Charge(*gateway, "k1", kRide).status, 500);
  ASSERT_EQ(gateway->Handle("POST", "/_faults", {}, R"({"fail_rate": 0, "drop_response_rate": 1})").status, 200);
  ASSERT_TRUE(Charge(*gateway, "k1", kRide).drop_connection);
  const std::vector<json> ops = Journal();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]["op"], "injected_failure");
  EXPECT_EQ(ops[0]["status"], 500);
  EXPECT_EQ(ops[1]["op"], "executed");
  EXPECT_EQ(ops[1]["dropped"], true);
}

TEST_F(OperationJournalTest, KeepsEarlierLinesAcrossARestart) {
  ASSERT_EQ(Charge(*Open(), "k1", kRide).status, 200);
  ASSERT_EQ(Charge(*Open(), "k1", kRide).status, 200);
  const std::vector<json> ops = Journal();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]["op"], "executed");
  EXPECT_EQ(ops[1]["op"], "replayed");
}

}  // namespace
}  // namespace fake_gateway
