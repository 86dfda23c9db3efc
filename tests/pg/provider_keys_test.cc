// ProviderKeysSince (phasekey/tools/provider_keys.h): the keys that may have
// called a provider since a time, with their provider keys, on a real
// PostgreSQL; the database's half of `phasekey keys reconcile`.
#include "phasekey/tools/provider_keys.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::hours;
using testing::TestDatabase;

constexpr char kStableId[] = "00000000-0000-4000-8000-0000000000";

class ProviderKeysTest : public ::testing::Test {
 protected:
  // A key row of `flow` in `state`, created `created_h_ago` hours ago and,
  // when finished, finished `finished_h_ago` hours ago; its stable id ends
  // in `n` (two digits).
  void Insert(const std::string& key, int n, const std::string& flow, const std::string& state, int created_h_ago,
              int finished_h_ago = 0) {
    const bool finished = state == "finished";
    const std::string ago = "now() - interval '";
    db_.Exec(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, request_path,"
        " request_fingerprint, recovery_point, state, stable_id, created_at, finished_at, response_status) VALUES"
        " ('acct', '" +
        key + "', " + std::to_string(AccountBucket("acct", 16)) + ", '" + flow +
        "', 'POST', '/rides', decode(repeat('00', 32), 'hex'), '" + (finished ? "finished" : "ride_created") + "', '" +
        state + "', '" + kStableId + (n < 10 ? "0" : "") + std::to_string(n) + "', " + ago +
        std::to_string(created_h_ago) + " hours', " +
        (finished ? ago + std::to_string(finished_h_ago) + " hours'" : std::string("NULL")) + ", " +
        (finished ? "201" : "NULL") + ")");
  }

  static nlohmann::json RideFlow() {
    return {{"name", "create_ride"}, {"points", {"started"}}, {"foreign_phases", {"charge", "notify"}}};
  }

  std::map<std::string, std::vector<std::string>> Found(std::chrono::system_clock::time_point since) {
    auto found = ProviderKeysSince(db_.url(), since, {RideFlow()});
    EXPECT_TRUE(found.has_value()) << found.error().ToString();
    std::map<std::string, std::vector<std::string>> out;
    if (!found) return out;
    for (const KeyProviderKeys& k : found->keys) out[k.idempotency_key] = k.provider_keys;
    return out;
  }

  TestDatabase db_;
};

TEST_F(ProviderKeysTest, TakesEveryKeyNotFinishedAndEveryKeyFinishedSinceWithItsProviderKeys) {
  Insert("finished-long-ago", 1, "create_ride", "finished", 50, 49);
  Insert("created-long-ago-finished-since", 2, "create_ride", "finished", 50, 1);
  Insert("recent", 3, "create_ride", "finished", 2, 1);
  Insert("active-old", 4, "create_ride", "active", 50);
  Insert("dead-old", 5, "create_ride", "dead", 50);
  Insert("parked-old", 6, "create_ride", "needs_operator", 50);
  const auto since = std::chrono::system_clock::now() - hours(24);
  const auto found = Found(since);
  EXPECT_EQ(found.count("finished-long-ago"), 0u) << "all its calls came before it finished, before T";
  for (const char* key : {"created-long-ago-finished-since", "recent", "active-old", "dead-old", "parked-old"}) {
    EXPECT_EQ(found.count(key), 1u) << key;
  }
  EXPECT_EQ(found.at("recent"),
            (std::vector<std::string>{std::string(kStableId) + "03:charge", std::string(kStableId) + "03:notify"}));
}

TEST_F(ProviderKeysTest, CountsTheKeysOfFlowsNotDescribedInsteadOfGuessingTheirProviderKeys) {
  Insert("ride", 1, "create_ride", "active", 1);
  Insert("other-1", 2, "legacy_flow", "active", 1);
  Insert("other-2", 3, "legacy_flow", "finished", 2, 1);
  auto found = ProviderKeysSince(db_.url(), std::chrono::system_clock::now() - hours(24), {RideFlow()});
  ASSERT_TRUE(found.has_value()) << found.error().ToString();
  EXPECT_EQ(found->keys.size(), 1u);
  EXPECT_EQ(found->undescribed, (std::map<std::string, std::int64_t>{{"legacy_flow", 2}}));
}

TEST_F(ProviderKeysTest, RefusesADescriptionWithoutForeignPhasesOrTwiceTheSameFlow) {
  const auto since = std::chrono::system_clock::now();
  nlohmann::json old = RideFlow();
  old.erase("foreign_phases");
  auto refused = ProviderKeysSince(db_.url(), since, {old});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("no \"foreign_phases\""), std::string::npos) << refused.error().message();
  auto twice = ProviderKeysSince(db_.url(), since, {RideFlow(), RideFlow()});
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message().find("described twice"), std::string::npos);
}

}  // namespace
}  // namespace phasekey
