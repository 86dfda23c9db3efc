// fake_gateway's lookups after a provider has forgotten a key: Stripe's
// charge search and retrieve, Moyasar's payment by given_id and HyperPay's
// query keep finding payments after the key's retention has passed or
// POST /_forget_keys, and the phases/ adapters read the gateway's real
// answers as found or not found. Then the binary over loopback HTTP, reached
// by a host name through the Beast client's resolver.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "fake_gateway/gateway.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/http_client.h"
#include "ride_booking/send_in_process.h"
#include "support/child_process.h"

namespace fake_gateway {
namespace {

using nlohmann::json;
using phasekey::phases::Lookup;
using phasekey::phases::PaymentIntent;
using phasekey::phases::ProviderAdapter;
using phasekey::phases::ProviderAnswer;
using phasekey::phases::ProviderRequest;
using std::chrono::milliseconds;

constexpr char kProviderKey[] = "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c:charge";
constexpr char kOtherProviderKey[] = "7e1d9a2b-6c4f-4e8a-b3d5-2f9c1a7e4b60:charge";
constexpr char kForm[] = "application/x-www-form-urlencoded";

std::filesystem::path MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_lookup_test.XXXXXX").string();
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}

// A stripe charge of 20.00 USD for customer 7 with this reference.
std::string RideForm(std::string_view reference) {
  return "amount=2000&currency=usd&customer=7&description=ride&metadata%5Bphasekey_reference%5D=" +
         std::string(reference);
}

std::string SearchTarget(std::string_view query) {
  std::string target = "/v1/charges/search?query=";
  for (unsigned char c : query) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    target += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return target;
}

std::string ReferenceQuery(std::string_view reference) {
  return "metadata['phasekey_reference']:'" + std::string(reference) + "'";
}

class FakeGatewayLookupTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Gateway> Open(const std::string& dialect = "stripe", Faults faults = {}) {
    GatewayOptions options;
    options.data_dir = dir_;
    options.dialect = dialect;
    options.faults = faults;
    options.seed = 7;
    options.clock = [this] { return std::chrono::system_clock::time_point(milliseconds(now_ms_.load())); };
    std::string error;
    std::unique_ptr<Gateway> gateway = Gateway::Open(std::move(options), &error);
    EXPECT_NE(gateway, nullptr) << error;
    return gateway;
  }

  static GatewayResponse Charge(Gateway& gateway, std::string_view key, const std::string& form) {
    Headers headers = {{"Content-Type", kForm}, {"Idempotency-Key", std::string(key)}};
    return gateway.Handle("POST", "/v1/charges", headers, form);
  }

  static GatewayResponse Get(Gateway& gateway, const std::string& target) {
    return gateway.Handle("GET", target, {}, "");
  }

  static GatewayResponse ForgetKeys(Gateway& gateway) {
    GatewayResponse response = gateway.Handle("POST", "/_forget_keys", {}, "");
    EXPECT_EQ(response.status, 200) << response.body;
    return response;
  }

  void PassRetention() { now_ms_ += 24 * 3600 * 1000 + 1; }

  // Sends an adapter's request to the gateway in process, as the HTTP client
  // would over the network.
  static ProviderAnswer Send(Gateway& gateway, const ProviderRequest& request) {
    return SendInProcess(gateway, request);
  }

  static Lookup LookUp(Gateway& gateway, const ProviderAdapter& adapter, std::string_view provider_key) {
    auto request = adapter.BuildLookup(adapter.ReferenceFor(provider_key));
    EXPECT_TRUE(request.has_value());
    return request ? adapter.ParseLookup(Send(gateway, *request)) : Lookup{};
  }

  // Charges through `adapter`; returns the payment id ("" on failure).
  static std::string ChargeThrough(Gateway& gateway, const ProviderAdapter& adapter, const PaymentIntent& intent,
                                   std::string_view provider_key) {
    auto request = adapter.BuildCharge(intent, provider_key);
    EXPECT_TRUE(request.has_value()) << (request ? "" : request.error().ToString());
    if (!request) return "";
    const ProviderAnswer answer = Send(gateway, *request);
    const phasekey::phases::Classification c = adapter.Classify(answer);
    EXPECT_EQ(c.kind, phasekey::phases::Classification::Kind::kSucceeded) << answer.status << " " << answer.body;
    return c.payment_id;
  }

  std::atomic<int64_t> now_ms_{1'700'000'000'000};
  std::filesystem::path dir_;
};

TEST_F(FakeGatewayLookupTest, SearchFindsAChargeByItsMetadataReferenceInStripesSearchResultShape) {
  auto gateway = Open();
  const json first = json::parse(Charge(*gateway, "k1", RideForm("ref-1")).body);
  Charge(*gateway, "k2", RideForm("ref-2"));
  EXPECT_EQ(first.at("metadata"), json({{"phasekey_reference", "ref-1"}}));

  const GatewayResponse found = Get(*gateway, SearchTarget(ReferenceQuery("ref-1")));
  ASSERT_EQ(found.status, 200) << found.body;
  const json result = json::parse(found.body);
  EXPECT_EQ(result.at("object"), "search_result");
  EXPECT_EQ(result.at("url"), "/v1/charges/search");
  EXPECT_EQ(result.at("has_more"), false);
  EXPECT_TRUE(result.at("next_page").is_null());
  ASSERT_EQ(result.at("data").size(), 1u);
  EXPECT_EQ(result.at("data")[0], first);  // the charge object, as created
}

TEST_F(FakeGatewayLookupTest, SearchAnswersEmptyDataForAnUnknownReference) {
  auto gateway = Open();
  Charge(*gateway, "k1", RideForm("ref-1"));
  for (const std::string& query : {ReferenceQuery("ref-9"), std::string("metadata['order_reference']:'ref-1'")}) {
    const GatewayResponse none = Get(*gateway, SearchTarget(query));
    ASSERT_EQ(none.status, 200) << none.body;
    const json result = json::parse(none.body);
    EXPECT_EQ(result.at("object"), "search_result");
    EXPECT_EQ(result.at("data"), json::array()) << query;
    EXPECT_EQ(result.at("has_more"), false);
  }
}

TEST_F(FakeGatewayLookupTest, SearchKeepsFindingAChargeAfterForgetKeysWhileTheKeyChargesAgain) {
  auto gateway = Open();
  const std::string id = json::parse(Charge(*gateway, "k1", RideForm("ref-1")).body).at("id");
  const json forgotten = json::parse(ForgetKeys(*gateway).body);
  EXPECT_EQ(forgotten.at("forgotten_before_ms"), now_ms_.load() + 1);

  const json result = json::parse(Get(*gateway, SearchTarget(ReferenceQuery("ref-1"))).body);
  ASSERT_EQ(result.at("data").size(), 1u);
  EXPECT_EQ(result.at("data")[0].at("id"), id);
  EXPECT_EQ(Get(*gateway, "/v1/charges/" + id).status, 200);
  // The key itself is gone: the same request charges again, unreplayed.
  const GatewayResponse again = Charge(*gateway, "k1", RideForm("ref-1"));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(FindHeader(again.headers, "Idempotent-Replayed"), std::nullopt);
  EXPECT_NE(json::parse(again.body).at("id"), id);
}

TEST_F(FakeGatewayLookupTest, SearchKeepsFindingAChargeAfterTheRetentionPassed) {
  auto gateway = Open();
  const std::string id = json::parse(Charge(*gateway, "k1", RideForm("ref-1")).body).at("id");
  PassRetention();
  const json result = json::parse(Get(*gateway, SearchTarget(ReferenceQuery("ref-1"))).body);
  ASSERT_EQ(result.at("data").size(), 1u);
  EXPECT_EQ(result.at("data")[0].at("id"), id);
}

TEST_F(FakeGatewayLookupTest, SearchListsNewestFirstUpToTheLimitAndSaysWhenThereIsMore) {
  auto gateway = Open();
  const json older = json::parse(Charge(*gateway, "k1", RideForm("same")).body);
  now_ms_ += 1000;
  const json newer = json::parse(Charge(*gateway, "k2", RideForm("same")).body);
  const json both = json::parse(Get(*gateway, SearchTarget(ReferenceQuery("same"))).body);
  ASSERT_EQ(both.at("data").size(), 2u);
  EXPECT_EQ(both.at("data")[0].at("id"), newer.at("id"));
  EXPECT_EQ(both.at("data")[1].at("id"), older.at("id"));
  const json one = json::parse(Get(*gateway, SearchTarget(ReferenceQuery("same")) + "&limit=1").body);
  ASSERT_EQ(one.at("data").size(), 1u);
  EXPECT_EQ(one.at("data")[0].at("id"), newer.at("id"));
  EXPECT_EQ(one.at("has_more"), true);
}

TEST_F(FakeGatewayLookupTest, SearchReadsDoubleQuotesAndBackslashEscapes) {
  auto gateway = Open();
  const std::string id = json::parse(Charge(*gateway, "k1", RideForm("it%27s%5Chere")).body).at("id");  // it's\here
  for (const char* query :
       {R"(metadata['phasekey_reference']:'it\'s\\here')", R"( metadata["phasekey_reference"]:"it's\\here" )"}) {
    const json result = json::parse(Get(*gateway, SearchTarget(query)).body);
    ASSERT_EQ(result.at("data").size(), 1u) << query;
    EXPECT_EQ(result.at("data")[0].at("id"), id);
  }
}

TEST_F(FakeGatewayLookupTest, SearchRefusesWhatItCannotAnswerWithAnInvalidRequestError) {
  auto gateway = Open();
  const std::string search = SearchTarget(ReferenceQuery("ref-1"));
  for (const std::string& target :
       {std::string("/v1/charges/search"), SearchTarget("amount>100"), SearchTarget("metadata['k']:'v' AND x:'y'"),
        SearchTarget("metadata['k']:'unterminated"), SearchTarget("metadata['']:'v'"), search + "&limit=0",
        search + "&limit=101", search + "&limit=x", search + "&page=abc"}) {
    const GatewayResponse refused = Get(*gateway, target);
    EXPECT_EQ(refused.status, 400) << target;
    EXPECT_EQ(json::parse(refused.body).at("error").at("type"), "invalid_request_error") << target;
  }
  const GatewayResponse post = gateway->Handle("POST", "/v1/charges/search", {}, "");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(FindHeader(post.headers, "Allow"), "GET");
}

TEST_F(FakeGatewayLookupTest, RetrieveAnswersTheChargeOrResourceMissing) {
  auto gateway = Open();
  const GatewayResponse created = Charge(*gateway, "k1", RideForm("ref-1"));
  const std::string id = json::parse(created.body).at("id");
  PassRetention();
  const GatewayResponse fetched = Get(*gateway, "/v1/charges/" + id);
  ASSERT_EQ(fetched.status, 200);
  EXPECT_EQ(fetched.body, created.body);
  const GatewayResponse missing = Get(*gateway, "/v1/charges/ch_nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(json::parse(missing.body).at("error").at("code"), "resource_missing");
  EXPECT_EQ(gateway->Handle("POST", "/v1/charges/" + id, {}, "").status, 405);
  EXPECT_EQ(Get(*gateway, "/v1/charges/" + id + "/refunds").status, 404);
  EXPECT_EQ(gateway->Handle("DELETE", "/v1/charges", {}, "").status, 405);
}

TEST_F(FakeGatewayLookupTest, LookupsIgnoreFaults) {
  auto gateway = Open();
  const std::string id = json::parse(Charge(*gateway, "k1", RideForm("ref-1")).body).at("id");
  ASSERT_EQ(gateway->Handle("POST", "/_faults", {}, R"({"fail_rate": 1, "drop_response_rate": 1})").status, 200);
  ASSERT_EQ(Charge(*gateway, "k2", RideForm("ref-2")).status, 500);  // the faults are on
  const GatewayResponse search = Get(*gateway, SearchTarget(ReferenceQuery("ref-1")));
  EXPECT_EQ(search.status, 200);
  EXPECT_FALSE(search.drop_connection);
  const GatewayResponse fetched = Get(*gateway, "/v1/charges/" + id);
  EXPECT_EQ(fetched.status, 200);
  EXPECT_FALSE(fetched.drop_connection);
}

TEST_F(FakeGatewayLookupTest, ForgettingAndMetadataSurviveARestart) {
  std::string id;
  {
    auto gateway = Open();
    id = json::parse(Charge(*gateway, "k1", RideForm("ref-1")).body).at("id");
    ForgetKeys(*gateway);
  }
  auto reopened = Open();
  const json result = json::parse(Get(*reopened, SearchTarget(ReferenceQuery("ref-1"))).body);
  ASSERT_EQ(result.at("data").size(), 1u);
  EXPECT_EQ(result.at("data")[0].at("id"), id);
  const GatewayResponse again = Charge(*reopened, "k1", RideForm("ref-1"));
  EXPECT_EQ(FindHeader(again.headers, "Idempotent-Replayed"), std::nullopt);
  EXPECT_NE(json::parse(again.body).at("id"), id);
}

TEST_F(FakeGatewayLookupTest, ForgetKeysIsPostOnlyAndSparesLaterAnswers) {
  auto gateway = Open();
  EXPECT_EQ(Get(*gateway, "/_forget_keys").status, 405);
  ForgetKeys(*gateway);
  now_ms_ += 1;
  const GatewayResponse first = Charge(*gateway, "k1", RideForm("ref-1"));
  const GatewayResponse replayed = Charge(*gateway, "k1", RideForm("ref-1"));
  EXPECT_EQ(FindHeader(replayed.headers, "Idempotent-Replayed"), "true");
  EXPECT_EQ(replayed.body, first.body);
}

// The phases/ adapters that have a lookup, on the gateway's real answers.

TEST_F(FakeGatewayLookupTest, StripeV1AdapterFindsItsChargeAfterTheKeyIsForgottenAndNotAnother) {
  auto gateway = Open();
  auto adapter = phasekey::phases::NewStripeV1Adapter();
  ASSERT_TRUE(adapter->info().has_lookup);
  const PaymentIntent intent{2000, "USD", "cus_7", "", "Ride", "ride-1", ""};
  const std::string id = ChargeThrough(*gateway, *adapter, intent, kProviderKey);
  ASSERT_FALSE(id.empty());
  ForgetKeys(*gateway);
  PassRetention();
  const Lookup found = LookUp(*gateway, *adapter, kProviderKey);
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.payment_id, id);
  const Lookup none = LookUp(*gateway, *adapter, kOtherProviderKey);
  EXPECT_EQ(none.kind, Lookup::Kind::kNotFound) << none.message;
}

TEST_F(FakeGatewayLookupTest, StripeV1AdapterQuotesAReferenceTheGatewayThenMatchesExactly) {
  auto gateway = Open();
  auto adapter = phasekey::phases::NewStripeV1Adapter();
  const char kQuotingKey[] = "row-'1'\\x:charge";
  const PaymentIntent intent{2000, "USD", "cus_7", "", "Ride", "", ""};
  const std::string id = ChargeThrough(*gateway, *adapter, intent, kQuotingKey);
  const Lookup found = LookUp(*gateway, *adapter, kQuotingKey);
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.payment_id, id);
  EXPECT_EQ(LookUp(*gateway, *adapter, "row-'1'x:charge").kind, Lookup::Kind::kNotFound);
}

TEST_F(FakeGatewayLookupTest, MoyasarAdapterFetchesItsPaymentAfterTheKeyIsForgotten) {
  auto gateway = Open("moyasar");
  phasekey::phases::MoyasarOptions options;
  options.callback_url = "https://rides.example/return";
  auto adapter = phasekey::phases::NewMoyasarAdapter(options);
  ASSERT_TRUE(adapter->info().has_lookup);
  const PaymentIntent intent{2000, "SAR", "token_7", "", "Ride", "ride-1", ""};
  const std::string id = ChargeThrough(*gateway, *adapter, intent, kProviderKey);
  ASSERT_FALSE(id.empty());
  ForgetKeys(*gateway);
  Lookup found = LookUp(*gateway, *adapter, kProviderKey);
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.payment_id, id);
  PassRetention();
  found = LookUp(*gateway, *adapter, kProviderKey);
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(LookUp(*gateway, *adapter, kOtherProviderKey).kind, Lookup::Kind::kNotFound);
}

TEST_F(FakeGatewayLookupTest, MoyasarAdapterStillSeesADeclineAfterTheKeyIsForgotten) {
  auto gateway = Open("moyasar");
  phasekey::phases::MoyasarOptions options;
  options.callback_url = "https://rides.example/return";
  auto adapter = phasekey::phases::NewMoyasarAdapter(options);
  auto request = adapter->BuildCharge({2000, "SAR", "token_13", "", "Ride", "", ""}, kProviderKey);
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(adapter->Classify(Send(*gateway, *request)).kind, phasekey::phases::Classification::Kind::kTerminal);
  PassRetention();
  const Lookup found = LookUp(*gateway, *adapter, kProviderKey);
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.kind, phasekey::phases::Classification::Kind::kTerminal);
}

TEST_F(FakeGatewayLookupTest, HyperPayAdapterQueriesItsPaymentAfterKeysAreForgotten) {
  auto gateway = Open("hyperpay");
  phasekey::phases::HyperPayOptions options;
  options.entity_id = "8a8294174b7ecb28014b9699220015ca";
  auto adapter = phasekey::phases::NewHyperPayAdapter(options);
  ASSERT_TRUE(adapter->info().has_lookup);
  const PaymentIntent intent{2000, "USD", "reg_7", "", "Ride", "ride-1", ""};
  const std::string id = ChargeThrough(*gateway, *adapter, intent, kProviderKey);
  ASSERT_FALSE(id.empty());
  ForgetKeys(*gateway);
  PassRetention();
  const Lookup found = LookUp(*gateway, *adapter, kProviderKey);
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.payment_id, id);
  EXPECT_EQ(LookUp(*gateway, *adapter, kOtherProviderKey).kind, Lookup::Kind::kNotFound);
}

// The binary, over loopback HTTP, through the phases/ HTTP client.

class FakeGatewayBinaryLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    gateway_ = std::make_unique<phasekey::testing::ChildProcess>(std::vector<std::string>{
        FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:0", "--data-dir", dir_.string(), "--seed", "3"});
    port_ = gateway_->WaitForListeningPort();
    ASSERT_GT(port_, 0);
    base_url_ = "http://127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    gateway_.reset();
    std::filesystem::remove_all(dir_);
  }

  ProviderAnswer Call(const ProviderRequest& request) const {
    return http_->Send(base_url_, request, milliseconds(10'000));
  }

  std::filesystem::path dir_;
  std::unique_ptr<phasekey::testing::ChildProcess> gateway_;
  uint16_t port_ = 0;
  std::string base_url_;
  std::unique_ptr<phasekey::phases::HttpClient> http_ = phasekey::phases::NewBeastHttpClient();
};

TEST_F(FakeGatewayBinaryLookupTest, ForgetKeysMakesAKeyChargeAgainWhileTheSearchStillFindsTheFirstCharge) {
  auto adapter = phasekey::phases::NewStripeV1Adapter();
  auto charge = adapter->BuildCharge({2000, "USD", "cus_7", "", "Ride", "", ""}, kProviderKey);
  ASSERT_TRUE(charge.has_value());
  const phasekey::phases::Classification first = adapter->Classify(Call(*charge));
  ASSERT_EQ(first.kind, phasekey::phases::Classification::Kind::kSucceeded);
  EXPECT_EQ(adapter->Classify(Call(*charge)).payment_id, first.payment_id);  // replayed

  ProviderRequest forget;
  forget.method = "POST";
  forget.path = "/_forget_keys";
  const ProviderAnswer forgotten = Call(forget);
  ASSERT_EQ(forgotten.status, 200) << forgotten.body;
  EXPECT_TRUE(json::parse(forgotten.body).at("forgotten_before_ms").is_number_integer());

  auto lookup = adapter->BuildLookup(adapter->ReferenceFor(kProviderKey));
  ASSERT_TRUE(lookup.has_value());
  const Lookup found = adapter->ParseLookup(Call(*lookup));
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.payment_id, first.payment_id);
  // What the lookup protects against: the forgotten key charges again.
  const phasekey::phases::Classification second = adapter->Classify(Call(*charge));
  EXPECT_EQ(second.kind, phasekey::phases::Classification::Kind::kSucceeded);
  EXPECT_NE(second.payment_id, first.payment_id);
}

// The Stripe adapter over the Beast client, the path the ride example
// charges through, with the gateway named by a host name.
TEST_F(FakeGatewayBinaryLookupTest, TheStripeAdapterChargesThroughAResolvedHostName) {
  phasekey::phases::BeastHttpClientOptions options;
  options.resolver = [](const std::string& host, const std::string&) {
    return host == "gateway.test" ? std::vector<std::string>{"127.0.0.1"} : std::vector<std::string>{};
  };
  const auto http = phasekey::phases::NewBeastHttpClient(options);
  phasekey::phases::StripeOptions stripe;
  stripe.base_url = "http://gateway.test:" + std::to_string(port_);
  auto adapter = phasekey::phases::NewStripeV1Adapter(stripe);
  auto charge = adapter->BuildCharge({2000, "usd", "7", "", "ride", "", ""}, kProviderKey);
  ASSERT_TRUE(charge.has_value());
  const ProviderAnswer answer = http->Send(adapter->base_url(), *charge, milliseconds(10'000));
  const phasekey::phases::Classification c = adapter->Classify(answer);
  EXPECT_EQ(c.kind, phasekey::phases::Classification::Kind::kSucceeded) << answer.error << answer.body;
}

}  // namespace
}  // namespace fake_gateway
