// A closed-loop load driver: N client threads, each sending its next request
// as soon as the previous one answered, until a shared request budget is
// spent. Every request's latency is recorded; the figures are computed the
// same way for every variant of every family, so ratios compare like with
// like.
//
// Thread-safety: RunLoad() is called from one thread; it runs `client`
// callables on threads of its own.
#ifndef PHASEKEY_BENCH_SUPPORT_LOAD_H_
#define PHASEKEY_BENCH_SUPPORT_LOAD_H_

#include <sys/resource.h>
#include <cstdint>

#include <functional>
#include <string>
#include <vector>

namespace phasekey::bench {

// One client's request function: sends request number `seq` (unique across
// all clients of a run, warm-up included) and returns true when it got the
// answer the variant expects. Called from one thread only.
using RequestFn = std::function<bool(std::int64_t seq)>;

// Makes client number `client`'s request function on that client's own
// thread (e.g. opening its connection), before the clock starts.
using ClientFactory = std::function<RequestFn(int client)>;

struct LoadOptions {
  int clients = 1;
  std::int64_t requests = 1000;  // measured requests, shared by all clients
  std::int64_t warmup = 0;       // unmeasured requests sent first, same clients
};

// Warm-up requests for `clients` clients, each on connections of its own
// that live for one run: eight per client, so that every connection has run
// each statement of a ride more than five times before the clock starts.
// PostgreSQL plans a prepared statement's first five executions one by one
// before it settles on a cached plan; a service whose connections live for
// hours pays that once per connection, not in every request it serves.
inline std::int64_t WarmUpFor(int clients) { return 8 * static_cast<std::int64_t>(clients) + 10; }

struct LoadStats {
  std::int64_t requests = 0;  // measured requests sent
  std::int64_t failures = 0;  // of those, how many returned false or threw
  double wall_s = 0;          // first measured request to last answer
  double rps = 0;             // requests / wall_s
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
  // CPU time of this whole process (all threads: clients, the engine's
  // helpers, libpq) during the measured requests, per request. The server's
  // CPU is not in it.
  double client_cpu_us_per_req = 0;
  // Of that, the time in the kernel (system time): sockets, scheduling.
  double client_sys_us_per_req = 0;
  std::string first_error;  // what the first throwing request said
};

// Runs the load; blocks until every client has finished.
LoadStats RunLoad(const LoadOptions& options, const ClientFactory& factory);

// CPU time so far, in microseconds, of getrusage's `who`: RUSAGE_SELF (this
// process) or RUSAGE_CHILDREN (its waited-for children). One reading.
struct CpuTime {
  double total_us = 0;   // user plus system
  double system_us = 0;  // of that, in the kernel
  CpuTime operator-(const CpuTime& o) const { return {total_us - o.total_us, system_us - o.system_us}; }
};
CpuTime ReadCpuTime(int who);
// ReadCpuTime(who).total_us.
double CpuUs(int who);

// Nearest-rank percentile `q` in [0, 1] of `values` (sorted in place); 0 for
// an empty vector.
double Percentile(std::vector<double>& values, double q);

// The stats of a set of latencies in milliseconds (sorted in place).
struct LatencySummary {
  double p50_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;
  std::size_t count = 0;
};
LatencySummary Summarize(std::vector<double>& latencies_ms);

}  // namespace phasekey::bench

#endif  // PHASEKEY_BENCH_SUPPORT_LOAD_H_
