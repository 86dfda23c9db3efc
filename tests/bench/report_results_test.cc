// bench_report's reading of a family's Google Benchmark JSON
// (bench/report/results.cc): runs named by their whole name up to Google
// Benchmark's own suffixes, medians over repetitions, failed runs. Run by
// ./run.sh test without the benchmarks; a report that cannot find a run
// renders "-" where its figure and goal belong, silently.
#include "report/results.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace phasekey::bench::report {
namespace {

nlohmann::json Iteration(const std::string& run_name, double real_time, double rps) {
  return {{"name", run_name + "/repeats:3/manual_time"},
          {"run_name", run_name + "/repeats:3/manual_time"},
          {"run_type", "iteration"},
          {"real_time", real_time},
          {"time_unit", "ms"},
          {"rps", rps}};
}

class ReportResultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("report_results_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Write(const std::string& family, const nlohmann::json& benchmarks) {
    std::ofstream(dir_ / (family + ".json"))
        << nlohmann::json{{"context", {{"host_name", "here"}}}, {"benchmarks", benchmarks}}.dump();
  }

  std::filesystem::path dir_;
};

TEST_F(ReportResultsTest, ARunWhoseVariantHoldsSlashesIsFoundByItsWholeVariant) {
  const std::string deployed = "http/deployed/gateway:tls/latency_ms:20/pool:on/connections:16";
  Write("http",
        nlohmann::json::array({Iteration(deployed, 30, 100), Iteration(deployed, 20, 300), Iteration(deployed, 25, 200),
                               Iteration("http/ride_booking/connections:16", 5, 900)}));
  std::string why;
  auto family = ReadFamily(dir_.string(), "http", &why);
  ASSERT_TRUE(family.has_value()) << why;
  const report::Run* run = family->Find("deployed/gateway:tls/latency_ms:20/pool:on", "connections:16");
  ASSERT_NE(run, nullptr) << "the deployed variant, six parts long, was not found";
  EXPECT_EQ(run->name, deployed) << "Google Benchmark's suffixes are not part of the name";
  EXPECT_EQ(run->repetitions, 3);
  EXPECT_EQ(run->Counter("rps"), 200) << "the median of the repetitions";
  EXPECT_EQ(run->real_time, 25);
  EXPECT_NE(family->Find("ride_booking", "connections:16"), nullptr);
  EXPECT_EQ(family->Find("deployed", "gateway:tls"), nullptr) << "a prefix of a run's name is not that run";
}

TEST_F(ReportResultsTest, ARunWhoseEveryRepetitionFailedKeepsItsErrorAndAMissingFileSaysSo) {
  nlohmann::json failed = Iteration("durability/phasekey/clients:16", 0, 0);
  failed["error_occurred"] = true;
  failed["error_message"] = "server gone";
  Write("durability", nlohmann::json::array({failed}));
  std::string why;
  auto family = ReadFamily(dir_.string(), "durability", &why);
  ASSERT_TRUE(family.has_value()) << why;
  const report::Run* run = family->Find("phasekey", "clients:16");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->error, "server gone");
  EXPECT_EQ(run->repetitions, 0);

  EXPECT_FALSE(ReadFamily(dir_.string(), "pgbench", &why).has_value());
  EXPECT_NE(why.find("no results file"), std::string::npos) << why;
}

}  // namespace
}  // namespace phasekey::bench::report
