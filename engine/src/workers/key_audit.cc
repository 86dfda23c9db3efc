#include "workers/key_audit.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <utility>

#include "pg/statements.h"
#include "util/json_log.h"

namespace phasekey::workers {
namespace {

std::string WindowsJson(const RegenerationAuditOptions& options) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [flow, window] : options.window_by_flow) out[flow] = window.count();
  return out.dump();
}

}  // namespace

KeyAudit::KeyAudit(RegenerationAuditOptions options, std::shared_ptr<Metrics> metrics)
    : options_(std::move(options)), windows_json_(WindowsJson(options_)), metrics_(std::move(metrics)) {}

Result<std::size_t> KeyAudit::Run(pg::Pool& pool, int bucket) {
  struct Pair {
    std::string flow, account, later_key, earlier_key;
    std::int64_t later_id = 0, earlier_id = 0;
    double apart_s = 0;
  };
  std::vector<Pair> pairs;
  Status s = pool.Transact([&](pqxx::transaction_base& tx) {
    for (const auto& r : pg::Exec(tx, sql::q::KeyAuditRegenerations, bucket, windows_json_,
                                  static_cast<double>(options_.window.count()))) {
      pairs.push_back(Pair{r[0].as<std::string>(), r[1].as<std::string>(), r[3].as<std::string>(),
                           r[5].as<std::string>(), r[2].as<std::int64_t>(), r[4].as<std::int64_t>(),
                           r[6].as<double>()});
    }
  });
  if (!s.ok()) return s;
  const auto previous = seen_.find(bucket);
  const bool first_pass = previous == seen_.end();
  std::set<std::int64_t> now_seen;
  std::size_t counted = 0;
  for (const Pair& p : pairs) {
    now_seen.insert(p.later_id);
    if (first_pass || previous->second.contains(p.later_id)) continue;
    ++counted;
    if (metrics_) metrics_->SuspectedKeyRegeneration(p.flow);
    LogJson({{"level", "warn"},
             {"msg", "suspected key regeneration: the same request under a new key"},
             {"account", p.account},
             {"flow", p.flow},
             {"key_id", p.later_id},
             {"idempotency_key", p.later_key},
             {"earlier_key_id", p.earlier_id},
             {"earlier_idempotency_key", p.earlier_key},
             {"apart_s", p.apart_s}});
  }
  seen_[bucket] = std::move(now_seen);
  return counted;
}

}  // namespace phasekey::workers
