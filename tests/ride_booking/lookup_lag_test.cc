// Lookups that lag behind charges (issue 28). Stripe's search is not
// read-after-write (a charge is searchable in under a minute, up to an hour
// behind during outages); a keyless gateway's query may lag the same way.
// fake_gateway imitates it with --lookup-lag-ms (GatewayOptions::lookup_lag)
// and fails lookups on demand (Faults::lookup_fail_rate); it also retrieves
// a PaymentIntent by id as Stripe does, never lagged.
//
// In process (a fake clock, so no waiting): what a search, a query and a
// retrieve see while the lag runs. End to end (fake_gateway, `ride_booking
// serve`, PostgreSQL): HyperPay, which takes no key, with its query lagging
// three seconds and every charge's answer lost; before issue 28 the charge
// phase took the query's "not found" for the truth and charged again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_gateway/gateway.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace fake_gateway {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kForm[] = "application/x-www-form-urlencoded";

class LaggingLookupTest : public ::testing::Test {
 protected:
  void Open(const std::string& dialect, milliseconds lag) {
    std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_lag_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    GatewayOptions options;
    options.data_dir = dir_;
    options.dialect = dialect;
    options.lookup_lag = lag;
    options.clock = [this] { return now_; };
    std::string error;
    gateway_ = Gateway::Open(std::move(options), &error);
    ASSERT_NE(gateway_, nullptr) << error;
  }
  void TearDown() override {
    gateway_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  GatewayResponse Get(const std::string& target) { return gateway_->Handle("GET", target, {}, ""); }
  GatewayResponse Post(const std::string& path, const std::string& form, const std::string& key = "") {
    Headers headers = {{"Content-Type", kForm}};
    if (!key.empty()) headers.emplace_back("Idempotency-Key", key);
    return gateway_->Handle("POST", path, headers, form);
  }
  // A confirmed PaymentIntent for `customer`, with metadata reference r-<customer>.
  json PaidIntent(const std::string& customer) {
    const GatewayResponse r = Post("/v1/payment_intents",
                                   "amount=2000&currency=usd&customer=" + customer +
                                       "&confirm=true&metadata%5Bphasekey_reference%5D=r-" + customer,
                                   "key-" + customer);
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body);
  }
  // The ids a search or query answer lists.
  static std::vector<std::string> Listed(const GatewayResponse& r, const char* array) {
    std::vector<std::string> ids;
    const json body = json::parse(r.body);
    if (body.contains(array)) {
      for (const auto& p : body[array]) ids.push_back(p["id"].get<std::string>());
    }
    return ids;
  }

  std::filesystem::path dir_;
  std::chrono::system_clock::time_point now_ = std::chrono::system_clock::now();
  std::unique_ptr<Gateway> gateway_;
};

constexpr char kIntentSearch[] = "/v1/payment_intents/search?query=metadata%5B%27phasekey_reference%27%5D%3A%27r-7%27";

TEST_F(LaggingLookupTest, AStripeSearchListsAPaymentOnlyOnceTheLagHasPassed) {
  Open("stripe", milliseconds(3000));
  const std::string id = PaidIntent("7")["id"];
  const GatewayResponse early = Get(kIntentSearch);
  ASSERT_EQ(early.status, 200) << early.body;
  EXPECT_TRUE(Listed(early, "data").empty()) << "listed before the lag passed: " << early.body;
  now_ += milliseconds(2999);
  EXPECT_TRUE(Listed(Get(kIntentSearch), "data").empty()) << "listed 1 ms early";
  now_ += milliseconds(1);
  EXPECT_EQ(Listed(Get(kIntentSearch), "data"), std::vector<std::string>{id});
}

TEST_F(LaggingLookupTest, AStripeRetrieveByIdIsNeverLagged) {
  Open("stripe", milliseconds(60000));
  const json intent = PaidIntent("7");
  const GatewayResponse retrieved = Get("/v1/payment_intents/" + intent["id"].get<std::string>());
  ASSERT_EQ(retrieved.status, 200) << retrieved.body;
  EXPECT_EQ(json::parse(retrieved.body), intent);
}

TEST_F(LaggingLookupTest, AStripePaymentIntentIsRetrievedByIdAndNothingElseIs) {
  Open("stripe", milliseconds(0));
  const json intent = PaidIntent("7");
  const std::string id = intent["id"];
  const GatewayResponse retrieved = Get("/v1/payment_intents/" + id);
  ASSERT_EQ(retrieved.status, 200) << retrieved.body;
  EXPECT_EQ(json::parse(retrieved.body)["object"], "payment_intent");
  EXPECT_EQ(json::parse(retrieved.body)["status"], "succeeded");
  EXPECT_EQ(json::parse(retrieved.body)["metadata"]["phasekey_reference"], "r-7");

  const GatewayResponse charge = Post("/v1/charges", "amount=500&currency=usd&customer=8", "charge-key-8");
  ASSERT_EQ(charge.status, 200) << charge.body;
  const std::string charge_id = json::parse(charge.body)["id"];
  for (const std::string& missing : {std::string("pi_doesnotexist"), charge_id}) {
    const GatewayResponse r = Get("/v1/payment_intents/" + missing);
    EXPECT_EQ(r.status, 404) << missing << ": " << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "resource_missing") << r.body;
  }
  EXPECT_EQ(Get("/v1/charges/" + id).status, 404) << "an intent is not a charge";
  EXPECT_EQ(gateway_->Handle("POST", "/v1/payment_intents/" + id, {}, "").status, 405);
}

TEST_F(LaggingLookupTest, AHyperPayQueryListsAPaymentOnlyOnceTheLagHasPassed) {
  Open("hyperpay", milliseconds(3000));
  const GatewayResponse paid =
      Post("/v1/registrations/reg-7/payments",
           "entityId=e&amount=20.00&currency=SAR&paymentType=DB&merchantTransactionId=ref-0007");
  ASSERT_EQ(paid.status, 200) << paid.body;
  const std::string query = "/v3/query?entityId=e&merchantTransactionId=ref-0007";
  const GatewayResponse early = Get(query);
  EXPECT_EQ(json::parse(early.body)["result"]["code"], "700.400.580") << "not found while the lag runs: " << early.body;
  now_ += milliseconds(3000);
  EXPECT_EQ(Listed(Get(query), "payments"), std::vector<std::string>{json::parse(paid.body)["id"]});
}

TEST_F(LaggingLookupTest, TheLookupFaultFailsLookupsAndLeavesChargesAlone) {
  Open("stripe", milliseconds(0));
  ASSERT_EQ(gateway_->Handle("POST", "/_faults", {}, R"({"lookup_fail_rate": 1})").status, 200);
  const std::string id = PaidIntent("7")["id"];
  EXPECT_EQ(Get(kIntentSearch).status, 500);
  EXPECT_EQ(Get("/v1/payment_intents/" + id).status, 500);
  EXPECT_EQ(json::parse(Get("/_faults").body)["lookup_fail_rate"], 1.0);
  ASSERT_EQ(gateway_->Handle("POST", "/_faults", {}, R"({"lookup_fail_rate": 0})").status, 200);
  EXPECT_EQ(Listed(Get(kIntentSearch), "data"), std::vector<std::string>{id});
  EXPECT_EQ(gateway_->Handle("POST", "/_faults", {}, R"({"lookup_fail_rate": 1.5})").status, 400);
}

// ---------------------------------------------------------------------------
// End to end: a keyless gateway whose query lags, and every answer lost.

constexpr int kRides = 4;
constexpr int kLagMs = 3000;

TEST(LaggingLookupEndToEndTest, AKeylessGatewayWhoseQueryLagsChargesEveryRideOnceThoughEveryAnswerIsLost) {
  phasekey::testing::TestDatabase db;
  const std::string logs = (std::filesystem::temp_directory_path() / ("pk-lag-" + db.name())).string();
  // The service's window covers the gateway's lag, plus the time between
  // the key reaching the charge and the charge being made.
  phasekey::testing::RideWorld world({.database_url = db.url(),
                                      .provider = "hyperpay",
                                      .log_dir = logs,
                                      .gateway_args = {"--lookup-lag-ms", std::to_string(kLagMs)},
                                      .lookup_window_ms = kLagMs + 2000});
  std::uint16_t port = 0;
  auto service = world.StartService(&port);
  ASSERT_NE(port, 0);
  ASSERT_TRUE(world.SetGatewayFaults({{"drop_response_rate", 1.0}}));

  // Each client retries its ride every 200 ms until it gets a final answer.
  const auto started = std::chrono::steady_clock::now();
  std::map<int, phasekey::testing::HttpResult> final_answers;
  std::mutex mu;
  std::vector<std::thread> clients;
  for (int user = 1; user <= kRides; ++user) {
    clients.emplace_back([&, user] {
      const std::string key = "lagging-ride-" + std::to_string(user) + "-abcdef";
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
      phasekey::testing::HttpResult r;
      do {
        r = world.PostRide(port, user, key, phasekey::testing::kRideBody, milliseconds(10000));
        if (r.ok && r.status != 503 && r.status != 409) break;
        std::this_thread::sleep_for(milliseconds(200));
      } while (std::chrono::steady_clock::now() < deadline);
      std::lock_guard lock(mu);
      final_answers[user] = r;
    });
  }
  for (std::thread& c : clients) c.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  for (const auto& [user, r] : final_answers) EXPECT_EQ(r.status, 201) << "user " << user << ": " << r.body;
  // The fault happened: every ride was settled by the query (its charge's
  // answer was lost), which could list it only after the lag.
  EXPECT_EQ(world.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE "
                        "outcomes->'charge_created'->>'reconciled' = 'true'"),
            std::to_string(kRides));
  EXPECT_GE(seconds, kLagMs / 1000.0) << "the rides finished before the query could list their charges";
  // Exactly one charge per ride in the gateway's ledger.
  const json ledger = world.Ledger();
  std::map<std::string, int> charges_per_reference;
  for (const auto& charge : ledger) ++charges_per_reference[charge["idempotency_key"].get<std::string>()];
  EXPECT_EQ(charges_per_reference.size(), static_cast<std::size_t>(kRides)) << ledger.dump(2);
  for (const auto& [reference, n] : charges_per_reference) {
    EXPECT_EQ(n, 1) << "the ride with merchant reference " << reference << " was charged " << n << " times";
  }
  std::printf("lag %d ms: %d rides, %zu charges, %.1f s\n", kLagMs, kRides, ledger.size(), seconds);
  service.reset();
  std::error_code ec;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(logs, ec);
}

}  // namespace
}  // namespace fake_gateway
