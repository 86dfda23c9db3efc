// docs/capacity.md's renderer (tests/doc_results/capacity_doc.h) on a
// results file made up here: the worked example is the measured figures
// times the load and the retention, and a failed or missing run is never
// rendered as a figure.
#include "doc_results/capacity_doc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace phasekey::doc_results {
namespace {

using nlohmann::json;

json Benchmark(const std::string& name, json counters) {
  counters["name"] = "capacity/" + name + "/iterations:1/repeats:1/manual_time";
  counters["run_type"] = "iteration";
  counters["loadavg_1m"] = 1.5;
  return counters;
}

json Wal(double all, double images) {
  return {{"wal_bytes_per_op", all},
          {"wal_fpi_bytes_per_op", images},
          {"wal_key_table_bytes_per_op", all / 4},
          {"wal_commit_bytes_per_op", 34},
          {"ops", 100},
          {"keys_in_table_before", 1000},
          {"heap_bytes_per_key_written", 300}};
}

json Row(double total) {
  return {{"rows", 100},
          {"tuple_bytes", 200},
          {"heap_bytes_per_row", total - 100},
          {"toast_bytes_per_row", 0},
          {"index_bytes:pkey_per_row", 60},
          {"index_bytes:reap_per_row", 40},
          {"index_bytes:redrive_per_row", 0},
          {"index_bytes_per_row", 100},
          {"total_bytes_per_row", total}};
}

// A capacity.json with every run the renderer reads: a finished row of 500
// bytes (sealed 600), 400 bytes per key at 1000 keys, a ride of 2000 bytes
// of WAL (500 of them page images), 3000 on the large table, a reaped key of
// 100 (none of it images), a retention of 3600 s.
json Results() {
  json benchmarks = json::array();
  for (const char* state : {"active_first_point", "active_outcome_recorded", "finished", "dead", "needs_operator"}) {
    benchmarks.push_back(Benchmark(std::string("rows/") + state, Row(500)));
    benchmarks.push_back(Benchmark(std::string("rows_sealed/") + state, Row(600)));
  }
  benchmarks.push_back(Benchmark("wal/ride", Wal(2000, 500)));
  benchmarks.push_back(Benchmark("wal_sealed/ride", Wal(2100, 500)));
  benchmarks.push_back(Benchmark("wal_large/ride", Wal(3000, 1500)));
  benchmarks.push_back(Benchmark("wal/replay", Wal(10, 0)));
  benchmarks.push_back(Benchmark("wal/reap", Wal(100, 0)));
  benchmarks.push_back(Benchmark("table/finished_keys:1000", {{"keys", 1000},
                                                              {"heap_bytes", 300000},
                                                              {"toast_bytes", 8192},
                                                              {"index_bytes:pkey", 91808},
                                                              {"total_bytes", 400000},
                                                              {"total_bytes_per_key", 400}}));
  return {{"context",
           {{"date", "2026-12-03T08:00:00+00:00"},
            {"phasekey.mode", "full"},
            {"phasekey.command", "./run.sh bench"},
            {"phasekey.commit", "abc1234"},
            {"machine.online_cpus", "2"},
            {"machine.loadavg_at_start", "1.00 1.00 1.00"},
            {"pg.server_version", "15"},
            {"pg.shared_buffers", "128MB"},
            {"pg.full_page_writes", "on"},
            {"phasekey.reaper_retention_s", "3600"}}},
          {"benchmarks", benchmarks}};
}

TEST(CapacityDocTest, TheWorkedExampleIsTheMeasuredFiguresTimesTheLoadAndTheRetention) {
  const CapacityExample e = ComputeCapacityExample(Results(), 10);
  EXPECT_DOUBLE_EQ(e.retention_s, 3600);
  EXPECT_DOUBLE_EQ(e.finished_rows, 36000);
  EXPECT_DOUBLE_EQ(e.bytes_per_key, 400);
  EXPECT_DOUBLE_EQ(e.disk_bytes, 36000 * 400);
  EXPECT_DOUBLE_EQ(e.sealed_extra_bytes, 36000 * 100);
  // Floor: (2000 - 500) per ride + 100 per reaped key; ceiling: 3000 + 100.
  EXPECT_DOUBLE_EQ(e.wal_floor_bytes_per_day, 10 * 86400 * 1600.0);
  EXPECT_DOUBLE_EQ(e.wal_ceiling_bytes_per_day, 10 * 86400 * 3100.0);
}

TEST(CapacityDocTest, ThePageHasEveryGeneratedSectionAndNamesOnlyTheIndexesARowIsIn) {
  const auto sections = RenderCapacitySections(Results());
  std::vector<std::string> names;
  for (const auto& s : sections) {
    EXPECT_EQ(s.doc, "docs/capacity.md");
    names.push_back(s.name);
  }
  EXPECT_THAT(names, ::testing::ElementsAre("capacity_run", "capacity_rows", "capacity_wal", "capacity_table",
                                            "capacity_example"));
  EXPECT_THAT(sections[1].text, ::testing::HasSubstr("`pkey` 60, `reap` 40 |"));
  // The page's example: 200 requests a second for the 3600 s retention.
  EXPECT_THAT(sections[4].text, ::testing::HasSubstr("200 × 3600 s = **720000 keys**"));
}

TEST(CapacityDocTest, AFailedRunIsRefusedInsteadOfRendered) {
  json results = Results();
  for (json& b : results["benchmarks"]) {
    if (b["name"].get<std::string>().rfind("capacity/wal/reap/", 0) == 0) {
      b["error_occurred"] = true;
      b["error_message"] = "the reaper left rides undeleted";
    }
  }
  EXPECT_THROW(RenderCapacitySections(results), std::runtime_error);
}

TEST(CapacityDocTest, AMissingRunIsRefusedInsteadOfRendered) {
  json results = Results();
  results["benchmarks"].erase(results["benchmarks"].begin());  // rows/active_first_point
  EXPECT_THROW(RenderCapacitySections(results), std::runtime_error);
}

}  // namespace
}  // namespace phasekey::doc_results
