#include "workers/key_audit.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <utility>
#include <vector>

#include "pg/statements.h"
#include "util/json_log.h"
#include "util/trace_parent.h"

namespace phasekey::workers {
namespace {

std::string WindowsJson(const RegenerationAuditOptions& options) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [flow, window] : options.window_by_flow) out[flow] = window.count();
  return out.dump();
}

// The widest of the windows, in seconds.
double WidestWindow(const RegenerationAuditOptions& options) {
  auto widest = options.window;
  for (const auto& [flow, window] : options.window_by_flow) widest = std::max(widest, window);
  return static_cast<double>(widest.count());
}

struct Pair {
  std::string flow, account, later_key, earlier_key;
  std::int64_t later_id = 0, earlier_id = 0;
  double apart_s = 0;
  std::string later_trace, earlier_trace;  // the keys' stored traceparents ("" : none)
};

void Report(const Pair& p, Metrics* metrics) {
  if (metrics) metrics->SuspectedKeyRegeneration(p.flow);
  nlohmann::json line = {{"level", "warn"},
                         {"msg", "suspected key regeneration: the same request under a new key"},
                         {"account", p.account},
                         {"flow", p.flow},
                         {"key_id", p.later_id},
                         {"idempotency_key", p.later_key},
                         {"earlier_key_id", p.earlier_id},
                         {"earlier_idempotency_key", p.earlier_key},
                         {"apart_s", p.apart_s}};
  if (auto later = util::ParseTraceParent(p.later_trace)) {
    line["trace_id"] = later->trace_id;
    line["parent_id"] = later->parent_id;
  }
  if (auto earlier = util::ParseTraceParent(p.earlier_trace)) line["earlier_trace_id"] = earlier->trace_id;
  LogJson(std::move(line));
}

}  // namespace

KeyAudit::KeyAudit(RegenerationAuditOptions options, std::shared_ptr<Metrics> metrics)
    : options_(std::move(options)),
      windows_json_(WindowsJson(options_)),
      widest_s_(WidestWindow(options_)),
      metrics_(std::move(metrics)) {}

Result<std::size_t> KeyAudit::Run(pg::Pool& pool, int bucket) {
  std::vector<Pair> fresh;
  Status s = pool.Transact([&](pqxx::transaction_base& tx) {
    fresh.clear();  // a retried transaction starts over
    for (const auto& r :
         pg::Exec(tx, sql::q::KeyAuditCountNew, bucket, windows_json_, static_cast<double>(options_.window.count()))) {
      fresh.push_back(Pair{r[0].as<std::string>(), r[1].as<std::string>(), r[3].as<std::string>(),
                           r[5].as<std::string>(), r[2].as<std::int64_t>(), r[4].as<std::int64_t>(), r[6].as<double>(),
                           r[7].is_null() ? "" : r[7].as<std::string>(), r[8].is_null() ? "" : r[8].as<std::string>()});
    }
    pg::Exec(tx, sql::q::KeyAuditForget, bucket, widest_s_);
  });
  if (!s.ok()) return s;
  for (const Pair& p : fresh) Report(p, metrics_.get());  // after COMMIT: counted once
  return fresh.size();
}

}  // namespace phasekey::workers
