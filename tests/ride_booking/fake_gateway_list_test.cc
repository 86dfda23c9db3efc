// fake_gateway's Stripe list (GET /v1/charges, GET /v1/payment_intents,
// stripe_list.h) and the phases/ Stripe adapter reading it page by page
// (ProviderAdapter::BuildList/ParseList): what `phasekey keys reconcile`
// relies on to see every operation made since a time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_gateway/gateway.h"
#include "phasekey/phases/adapters.h"
#include "ride_booking/send_in_process.h"

namespace fake_gateway {
namespace {

using nlohmann::json;
using phasekey::phases::OperationPage;
using phasekey::phases::PaymentIntent;
using phasekey::phases::ProviderAdapter;
using std::chrono::milliseconds;

constexpr std::int64_t kStartMs = 1'700'000'000'000;

class FakeGatewayListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_list_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    GatewayOptions options;
    options.data_dir = dir_;
    options.dialect = "stripe";
    options.clock = [this] { return std::chrono::system_clock::time_point(milliseconds(now_ms_.load())); };
    std::string error;
    gateway_ = Gateway::Open(std::move(options), &error);
    ASSERT_NE(gateway_, nullptr) << error;
  }
  void TearDown() override {
    gateway_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Charges `n` payments through `adapter`, one a second; their ids, oldest
  // first.
  std::vector<std::string> ChargeEachSecond(const ProviderAdapter& adapter, int n, const std::string& prefix) {
    std::vector<std::string> ids;
    PaymentIntent intent;
    intent.amount_minor = 2000;
    intent.currency = "usd";
    intent.customer_or_source = "cus_7";
    for (int i = 0; i < n; ++i) {
      now_ms_ += 1000;
      auto request = adapter.BuildCharge(intent, prefix + std::to_string(i) + ":charge");
      EXPECT_TRUE(request.has_value());
      const json answer = json::parse(SendInProcess(*gateway_, *request).body);
      ids.push_back(answer.at("id"));
    }
    return ids;
  }

  // Every operation the adapter lists from `since_s` on, and how many pages
  // it took.
  std::vector<std::string> ListAll(const ProviderAdapter& adapter, std::int64_t since_s, int* pages) {
    std::vector<std::string> ids;
    std::string cursor;
    *pages = 0;
    do {
      auto request = adapter.BuildList(std::chrono::system_clock::time_point(std::chrono::seconds(since_s)), cursor);
      EXPECT_TRUE(request.has_value());
      if (!request) break;
      auto page = adapter.ParseList(SendInProcess(*gateway_, *request));
      EXPECT_TRUE(page.has_value()) << (page ? "" : page.error().ToString());
      if (!page) break;
      ++*pages;
      for (const auto& op : page->operations) ids.push_back(op.id);
      cursor = page->next_cursor;
    } while (!cursor.empty() && *pages < 10);
    return ids;
  }

  std::atomic<std::int64_t> now_ms_{kStartMs};
  std::filesystem::path dir_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(FakeGatewayListTest, TheAdapterReadsEveryChargeSinceATimePageByPageNewestFirst) {
  phasekey::phases::StripeOptions o;
  const auto adapter = phasekey::phases::NewStripeV1Adapter(o);
  const std::vector<std::string> ids = ChargeEachSecond(*adapter, 150, "key-");
  // Charge i was made at kStartMs/1000 + i + 1: from charge 20 on.
  int pages = 0;
  const std::vector<std::string> listed = ListAll(*adapter, kStartMs / 1000 + 21, &pages);
  const std::vector<std::string> want(ids.rbegin(), ids.rend() - 20);
  EXPECT_EQ(listed, want);
  EXPECT_EQ(pages, 2) << "100 a page";
}

TEST_F(FakeGatewayListTest, AListedChargeCarriesItsReferenceAmountAndTime) {
  const auto adapter = phasekey::phases::NewStripeV1Adapter();
  const std::vector<std::string> ids = ChargeEachSecond(*adapter, 1, "only-");
  auto request = adapter->BuildList(std::chrono::system_clock::time_point(), "");
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->method, "GET");
  EXPECT_EQ(request->path, "/v1/charges?created%5Bgte%5D=0&limit=100");
  auto page = adapter->ParseList(SendInProcess(*gateway_, *request));
  ASSERT_TRUE(page.has_value());
  ASSERT_EQ(page->operations.size(), 1u);
  const auto& op = page->operations.front();
  EXPECT_EQ(op.id, ids.front());
  EXPECT_EQ(op.reference, adapter->ReferenceFor("only-0:charge"));
  EXPECT_EQ(op.amount, 2000);
  EXPECT_EQ(op.currency, "usd");
  EXPECT_EQ(op.created, kStartMs / 1000 + 1);
  EXPECT_EQ(op.status, "succeeded");
  EXPECT_TRUE(page->next_cursor.empty());
}

TEST_F(FakeGatewayListTest, ChargesAndPaymentIntentsAreListedApart) {
  phasekey::phases::StripeOptions intents_options;
  intents_options.api = phasekey::phases::StripeV1Api::kPaymentIntents;
  const auto intents = phasekey::phases::NewStripeV1Adapter(intents_options);
  const auto charges = phasekey::phases::NewStripeV1Adapter();
  const std::vector<std::string> charge_ids = ChargeEachSecond(*charges, 2, "c-");
  const std::vector<std::string> intent_ids = ChargeEachSecond(*intents, 2, "i-");
  int pages = 0;
  EXPECT_EQ(ListAll(*charges, 0, &pages), std::vector<std::string>(charge_ids.rbegin(), charge_ids.rend()));
  EXPECT_EQ(ListAll(*intents, 0, &pages), std::vector<std::string>(intent_ids.rbegin(), intent_ids.rend()));
}

TEST_F(FakeGatewayListTest, AFailedOrMalformedListIsAnErrorNeverAnEmptyPage) {
  const auto adapter = phasekey::phases::NewStripeV1Adapter();
  EXPECT_EQ(gateway_->Handle("GET", "/v1/charges?limit=500", {}, "").status, 400);
  EXPECT_EQ(gateway_->Handle("GET", "/v1/charges?ending_before=ch_1", {}, "").status, 400);
  const GatewayResponse missing = gateway_->Handle("GET", "/v1/charges?starting_after=ch_nope", {}, "");
  EXPECT_EQ(missing.status, 404);
  phasekey::phases::ProviderAnswer answer;
  answer.status = missing.status;
  answer.body = missing.body;
  EXPECT_FALSE(adapter->ParseList(answer).has_value());
  answer.status = 200;
  answer.body = R"({"object": "list", "has_more": true, "data": []})";
  EXPECT_FALSE(adapter->ParseList(answer).has_value()) << "more pages but no cursor to ask for them";
  answer.transport = phasekey::phases::ProviderAnswer::Transport::kSentNoAnswer;
  EXPECT_FALSE(adapter->ParseList(answer).has_value());
  EXPECT_FALSE(phasekey::phases::NewHyperPayAdapter()->BuildList({}, "").has_value()) << "no list: says so";
}

}  // namespace
}  // namespace fake_gateway
