// /metrics on the service and on the worker, in Prometheus text format.
#include <gtest/gtest.h>

#include <thread>

#include "support/http_client.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::HttpCall;
using testing::TestDatabase;

TEST(MetricsTest, TheServiceAndTheWorkerExposePrometheusMetrics) {
  TestDatabase db;
  testing::RideWorldOptions o{.database_url = db.url()};
  o.lease_seconds = 0;  // the service's own
  o.charge_timeout_ms = 0;
  testing::RideWorld world(o);
  std::uint16_t port = 0;
  auto service = world.StartService(&port);
  ASSERT_NE(port, 0);
  const std::vector<std::pair<std::string, std::string>> h = {{"Authorization", "Bearer tok_user_3"},
                                                              {"Idempotency-Key", "metrics-ride-0001"}};
  const std::string body = R"({"origin_lat": 1, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";
  ASSERT_EQ(HttpCall(port, "POST", "/rides", h, body).status, 201);
  ASSERT_EQ(HttpCall(port, "POST", "/rides", h, body).status, 201);
  auto m = HttpCall(port, "GET", "/metrics", {}, "");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.Header("content-type"), "text/plain; version=0.0.4");
  EXPECT_NE(m.body.find("phasekey_requests_total{flow=\"create_ride\",reply=\"completed\"} 1"), std::string::npos)
      << m.body;
  EXPECT_NE(m.body.find("phasekey_requests_total{flow=\"create_ride\",reply=\"replayed\"} 1"), std::string::npos);
  EXPECT_NE(m.body.find("phasekey_claims_total{flow=\"create_ride\",outcome=\"inserted\"} 1"), std::string::npos);
  EXPECT_NE(m.body.find("phasekey_phase_outcomes_total{flow=\"create_ride\",kind=\"moved\",phase=\"charge\"} 1"),
            std::string::npos);
  EXPECT_NE(m.body.find("phasekey_request_duration_seconds_bucket{flow=\"create_ride\",le=\"+Inf\"} 2"),
            std::string::npos);

  auto worker = world.StartWorker({.args = {"--metrics-listen", "127.0.0.1:0"}});
  const std::string where = worker->WaitForLine("metrics on ", std::chrono::seconds(30));
  ASSERT_FALSE(where.empty());
  const auto wport = static_cast<std::uint16_t>(std::stoi(where.substr(where.rfind(':') + 1)));
  std::string text;
  for (int i = 0; i < 50; ++i) {  // the reaper's first sweep sets the gauges
    text = HttpCall(wport, "GET", "/metrics", {}, "").body;
    if (text.find("phasekey_keys{state=\"active\"} 0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(text.find("phasekey_keys{state=\"active\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("phasekey_keys{state=\"dead\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("phasekey_dead_letters_total 0"), std::string::npos) << text;
}

}  // namespace
}  // namespace phasekey
