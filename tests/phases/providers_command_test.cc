// Runs the built `phasekey providers` (PHASEKEY_CLI_PATH) and checks its text
// table and its --json array.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace phasekey {
namespace {

struct CommandRun {
  int exit_code = -1;
  std::string out;
};

CommandRun Providers(const std::string& args) {
  CommandRun run;
  const std::string command = std::string("'") + PHASEKEY_CLI_PATH + "' providers " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) run.out.append(buf, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

const std::set<std::string> kProviders = {"stripe_v1",  "stripe_v2", "adyen",   "square",
                                          "tap",        "moyasar",   "paypal",  "checkout_com",
                                          "amazon_pay", "hyperpay",  "paytabs", "amazon_payment_services"};

TEST(ProvidersCommandTest, PrintsATableWithAHeaderAndOneRowPerProvider) {
  const CommandRun run = Providers("");
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.out.starts_with("PROVIDER")) << run.out;
  for (const char* column : {"KEY", "LIMITS", "RETENTION", "CONFLICT", "RECONCILIATION"}) {
    EXPECT_NE(run.out.substr(0, run.out.find('\n')).find(column), std::string::npos) << column;
  }
  std::size_t lines = 0;
  for (char c : run.out) lines += c == '\n';
  EXPECT_EQ(lines, 1 + kProviders.size());
  for (const auto& name : kProviders) EXPECT_NE(run.out.find("\n" + name + " "), std::string::npos) << name;
}

TEST(ProvidersCommandTest, TheTableShowsWhereTheKeyGoesAndHowLongItIsKept) {
  const std::string out = Providers("").out;
  EXPECT_NE(out.find("header Idempotency-Key"), std::string::npos);
  EXPECT_NE(out.find("body reference.idempotent"), std::string::npos);
  EXPECT_NE(out.find("none (reference merchantTransactionId)"), std::string::npos);
  EXPECT_NE(out.find("1..32 of [A-Za-z0-9_-]"), std::string::npos);
  EXPECT_NE(out.find("24h (assumed)"), std::string::npos);  // Square and Moyasar
  EXPECT_NE(out.find("unlimited"), std::string::npos);      // Amazon Pay
}

TEST(ProvidersCommandTest, JsonIsAnArrayWithOneObjectPerProvider) {
  const CommandRun run = Providers("--json");
  ASSERT_EQ(run.exit_code, 0);
  const nlohmann::json all = nlohmann::json::parse(run.out);
  ASSERT_TRUE(all.is_array());
  std::set<std::string> names;
  for (const auto& p : all) {
    names.insert(p.at("name").get<std::string>());
    for (const char* field : {"display_name", "key_placement", "key", "retention", "retention_seconds", "conflict",
                              "reference", "reconciliation", "sources"}) {
      EXPECT_TRUE(p.contains(field)) << p.at("name") << " lacks " << field;
    }
    EXPECT_FALSE(p.at("sources").empty()) << p.at("name");
  }
  EXPECT_EQ(names, kProviders);
}

TEST(ProvidersCommandTest, JsonCarriesTheFactsOfEachProvider) {
  const nlohmann::json all = nlohmann::json::parse(Providers("--json").out);
  auto find = [&](const std::string& name) {
    for (const auto& p : all) {
      if (p["name"] == name) return p;
    }
    return nlohmann::json();
  };
  EXPECT_EQ(find("square")["key"]["max_length"], 45);
  EXPECT_EQ(find("square")["key_placement"], "body");
  EXPECT_EQ(find("square")["retention_documented"], false);
  EXPECT_EQ(find("adyen")["retention_seconds"], 7 * 86400);
  EXPECT_EQ(find("paypal")["retention_seconds"], 6 * 3600);
  EXPECT_TRUE(find("amazon_pay")["retention_seconds"].is_null());
  EXPECT_EQ(find("moyasar")["key"]["alphabet"], "uuid");
  EXPECT_TRUE(find("hyperpay")["key"].is_null());
  EXPECT_EQ(find("hyperpay")["reconciliation"]["lookup"], true);
  EXPECT_EQ(find("adyen")["reconciliation"]["lookup"], false);
  // What `keys reconcile` can ask: only Stripe v1 lists its operations by time.
  EXPECT_EQ(find("stripe_v1")["reconciliation"]["list"], true);
  EXPECT_NE(find("stripe_v1")["reconciliation"]["listing"].get<std::string>().find("created[gte]"), std::string::npos);
  EXPECT_EQ(find("hyperpay")["reconciliation"]["list"], false);
}

}  // namespace
}  // namespace phasekey
