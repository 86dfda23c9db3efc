// docs/capacity.md's generated sections (doc_results.h), from the capacity
// family's results (bench/capacity_bench.cc, docs/results/benchmarks/
// capacity.json): bytes per key row in each state, WAL per ride, replay and
// reaped key, the key table and its indexes at 10^6 keys, and a worked
// example computed from those figures.
#ifndef PHASEKEY_TESTS_DOC_RESULTS_CAPACITY_DOC_H_
#define PHASEKEY_TESTS_DOC_RESULTS_CAPACITY_DOC_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "doc_results.h"

namespace phasekey::doc_results {

// What the worked example derives from the results, for a steady load of
// `requests_per_s` new keys, each finished and kept for the reaper's
// default retention.
struct CapacityExample {
  double requests_per_s = 0;
  double retention_s = 0;         // ReaperOptions::retention's default, as the run recorded it
  double finished_rows = 0;       // requests_per_s * retention_s
  double bytes_per_key = 0;       // table + TOAST + indexes, per finished key, at the table size measured
  double disk_bytes = 0;          // finished_rows * bytes_per_key
  double sealed_extra_bytes = 0;  // finished_rows * (sealed - plaintext finished row, all relations)
  // WAL a day: each request's ride and, in the steady state, one reaped
  // key per request. Floor: the rides' records without full-page images
  // (measured on the emptied table); ceiling: every ride as measured after
  // a checkpoint on the table of finished keys.
  double wal_floor_bytes_per_day = 0;
  double wal_ceiling_bytes_per_day = 0;
};

// The example for `requests_per_s` from a capacity.json. Throws
// std::runtime_error when a run it needs is missing or failed, and
// nlohmann::json exceptions when a field is.
CapacityExample ComputeCapacityExample(const nlohmann::json& run, double requests_per_s);

// Every generated section of docs/capacity.md. Throws as above.
std::vector<Section> RenderCapacitySections(const nlohmann::json& run);

}  // namespace phasekey::doc_results

#endif  // PHASEKEY_TESTS_DOC_RESULTS_CAPACITY_DOC_H_
