#include "support/load.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <latch>
#include <mutex>
#include <numeric>
#include <thread>

#include <sys/resource.h>

namespace phasekey::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Us(const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); }

}  // namespace

CpuTime ReadCpuTime(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return {Us(u.ru_utime) + Us(u.ru_stime), Us(u.ru_stime)};
}

double CpuUs(int who) { return ReadCpuTime(who).total_us; }

double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

LatencySummary Summarize(std::vector<double>& latencies_ms) {
  LatencySummary s;
  s.count = latencies_ms.size();
  if (latencies_ms.empty()) return s;
  s.p50_ms = Percentile(latencies_ms, 0.50);
  s.p99_ms = Percentile(latencies_ms, 0.99);
  s.max_ms = latencies_ms.back();
  s.mean_ms = std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0) / static_cast<double>(s.count);
  return s;
}

LoadStats RunLoad(const LoadOptions& options, const ClientFactory& factory) {
  const int clients = std::max(1, options.clients);
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> failures{0};
  std::mutex mu;
  std::vector<double> latencies;  // GUARDED_BY(mu)
  std::string first_error;        // GUARDED_BY(mu)
  latencies.reserve(static_cast<std::size_t>(options.requests));
  std::latch ready(clients + 1);
  std::latch warmed(clients + 1);
  std::latch go(1);
  Clock::time_point start;
  std::atomic<std::int64_t> warm_next{0};

  auto body = [&](int client) {
    RequestFn fn;
    try {
      fn = factory(client);
    } catch (const std::exception& e) {
      std::lock_guard lock(mu);
      if (first_error.empty()) first_error = std::string("client setup: ") + e.what();
    }
    ready.arrive_and_wait();
    // Warm-up: same clients, sequence numbers above the measured ones.
    while (fn) {
      const std::int64_t w = warm_next.fetch_add(1);
      if (w >= options.warmup) break;
      try {
        fn(options.requests + w);
      } catch (...) {
      }
    }
    warmed.count_down();
    go.wait();
    std::vector<double> mine;
    while (fn) {
      const std::int64_t seq = next.fetch_add(1);
      if (seq >= options.requests) break;
      const auto t0 = Clock::now();
      bool ok = false;
      try {
        ok = fn(seq);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        if (first_error.empty()) first_error = e.what();
      }
      mine.push_back(Ms(Clock::now() - t0));
      if (!ok) failures.fetch_add(1);
    }
    std::lock_guard lock(mu);
    latencies.insert(latencies.end(), mine.begin(), mine.end());
  };

  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(clients));
  for (int c = 0; c < clients; ++c) threads.emplace_back(body, c);
  ready.arrive_and_wait();
  warmed.arrive_and_wait();
  start = Clock::now();
  const CpuTime cpu_start = ReadCpuTime(RUSAGE_SELF);
  go.count_down();
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const CpuTime cpu = ReadCpuTime(RUSAGE_SELF) - cpu_start;

  LoadStats s;
  s.requests = static_cast<std::int64_t>(latencies.size());
  s.failures = failures.load();
  s.wall_s = wall;
  s.rps = wall > 0 ? static_cast<double>(s.requests) / wall : 0;
  s.first_error = first_error;
  if (s.requests > 0) {
    s.client_cpu_us_per_req = cpu.total_us / static_cast<double>(s.requests);
    s.client_sys_us_per_req = cpu.system_us / static_cast<double>(s.requests);
  }
  if (!latencies.empty()) {
    s.p90_ms = Percentile(latencies, 0.90);
    LatencySummary sum = Summarize(latencies);
    s.p50_ms = sum.p50_ms;
    s.p99_ms = sum.p99_ms;
    s.max_ms = sum.max_ms;
    s.mean_ms = sum.mean_ms;
  }
  return s;
}

}  // namespace phasekey::bench
