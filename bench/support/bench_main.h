// The shared main() of the benchmark binaries: one binary per family, each
// defining FamilyName() and RegisterFamily(). main() reads --quick, records
// how the results were produced (machine, mode, commit) in the Google
// Benchmark context, registers the family and runs it; every other flag goes
// to Google Benchmark (--benchmark_out=... and so on).
//
// Database families run each variant as a whole batch of requests per
// iteration (RegisterBatch): the time reported is the batch's wall time, and
// the figures that matter (throughput, percentiles, ratios' inputs) are
// counters.
#ifndef PHASEKEY_BENCH_SUPPORT_BENCH_MAIN_H_
#define PHASEKEY_BENCH_SUPPORT_BENCH_MAIN_H_

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

#include "support/load.h"
#include "support/server_stats.h"

namespace phasekey::bench {

struct BenchConfig {
  bool quick = false;  // --quick: fewer requests, points and repetitions
};

// Defined by each family binary.
const char* FamilyName();
void RegisterFamily(const BenchConfig& config);

// Runs `fn` after the family's benchmarks, before exit (close runners,
// drop databases while the server is still up). Last registered runs first.
void AtFamilyEnd(std::function<void()> fn);

// Prints "[family] what" to stderr at once: the progress line.
void Progress(const std::string& what);

// Records the server's settings (fsync, synchronous_commit, ...) in the
// results' context as "pg.<name>".
void AddServerContext(const std::string& url);

// Registers `fn` as one batch per iteration: one iteration, manual time,
// milliseconds, `repetitions` repetitions. `fn` must call SetIterationTime.
benchmark::internal::Benchmark* RegisterBatch(const std::string& name, std::function<void(benchmark::State&)> fn,
                                              int repetitions);

// Sets the batch's time and the load counters: requests, failures, rps,
// p50_ms, p90_ms, p99_ms, max_ms, mean_ms, client_cpu_us_per_req,
// client_sys_us_per_req. Marks the run as failed (with the first error)
// when every request failed.
void ReportLoad(benchmark::State& state, const LoadStats& stats);

// Sets server_tx_per_req, server_rollbacks_per_req, wal_bytes_per_req and,
// for a server on this machine, server_cpu_us_per_req from counts read
// before and after `sent` requests (warm-up included).
void ReportServerCounts(benchmark::State& state, const ServerCounts& before, const ServerCounts& after,
                        std::int64_t sent);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_BENCH_MAIN_H_
