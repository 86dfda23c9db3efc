// MetricsRoutes: /metrics and a /healthz that turns 503 when a worker role
// stops polling.
#include "phasekey/tools/metrics_routes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace phasekey {
namespace {

using std::chrono::milliseconds;

HttpRequest Get(const std::string& target) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  return r;
}

TEST(MetricsRoutesTest, MetricsAnswersThePrometheusText) {
  auto metrics = Metrics::Create();
  metrics->WorkerPolled("reaper");
  const PlainRoutes routes = MetricsRoutes(metrics);
  const std::optional<Response> r = routes(Get("/metrics"), nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(*r->headers.Find("Content-Type"), "text/plain; version=0.0.4");
  EXPECT_NE(r->body.find("phasekey_worker_last_poll_timestamp_seconds{role=\"reaper\"}"), std::string::npos) << r->body;
}

TEST(MetricsRoutesTest, OtherRequestsArePassedOn) {
  const PlainRoutes routes = MetricsRoutes(Metrics::Create());
  EXPECT_FALSE(routes(Get("/rides"), nullptr).has_value());
  HttpRequest post = Get("/metrics");
  post.method = "POST";
  EXPECT_FALSE(routes(post, nullptr).has_value());
}

TEST(MetricsRoutesTest, HealthIsOkWhileEveryRolePolledWithinItsBound) {
  auto metrics = Metrics::Create();
  metrics->WorkerPolled("redrive");
  metrics->WorkerPolled("reaper");
  const PlainRoutes routes =
      MetricsRoutes(metrics, {{"redrive", milliseconds(60000)}, {"reaper", milliseconds(60000)}});
  const std::optional<Response> r = routes(Get("/healthz"), nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  const auto body = nlohmann::json::parse(r->body);
  EXPECT_EQ(body["status"], "ok");
  EXPECT_TRUE(body["roles"]["reaper"]["ok"].get<bool>());
  EXPECT_LT(body["roles"]["reaper"]["last_poll_age_s"].get<double>(), 60.0);
}

TEST(MetricsRoutesTest, HealthIsUnavailableWhenARoleIsLate) {
  auto metrics = Metrics::Create();
  metrics->WorkerPolled("reaper");
  const PlainRoutes routes = MetricsRoutes(metrics, {{"reaper", milliseconds(60000)}, {"enqueuer", milliseconds(5)}});
  std::this_thread::sleep_for(milliseconds(20));  // the enqueuer never polls
  const std::optional<Response> r = routes(Get("/healthz"), nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503) << r->body;
  const auto body = nlohmann::json::parse(r->body);
  EXPECT_EQ(body["status"], "late");
  EXPECT_TRUE(body["roles"]["reaper"]["ok"].get<bool>());
  EXPECT_FALSE(body["roles"]["enqueuer"]["ok"].get<bool>());
  EXPECT_TRUE(body["roles"]["enqueuer"]["last_poll_age_s"].is_null());
}

TEST(MetricsRoutesTest, AStartingWorkerHasItsBoundToMakeAFirstPoll) {
  const PlainRoutes routes = MetricsRoutes(Metrics::Create(), {{"redrive", milliseconds(60000)}});
  const std::optional<Response> r = routes(Get("/healthz"), nullptr);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
}

}  // namespace
}  // namespace phasekey
