// The reaper's audit for key regeneration (phasekey/workers.h,
// RegenerationAuditOptions): which keys of a bucket repeat an earlier key's
// request within the flow's window, counted once each.
#ifndef PHASEKEY_SRC_WORKERS_KEY_AUDIT_H_
#define PHASEKEY_SRC_WORKERS_KEY_AUDIT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "pg/pool.h"
#include "phasekey/metrics.h"
#include "phasekey/status.h"
#include "phasekey/workers.h"

namespace phasekey::workers {

// Not thread-safe: one reaper thread runs it.
class KeyAudit {
 public:
  KeyAudit(RegenerationAuditOptions options, std::shared_ptr<Metrics> metrics);

  // One read of `bucket`'s recent keys (KeyAuditRegenerations). Each later
  // key of a pair is counted and logged the first time a pass finds it,
  // except in the bucket's first pass, which only learns what is there (a
  // restarted reaper does not count again what its predecessor counted).
  // Returns the keys counted.
  Result<std::size_t> Run(pg::Pool& pool, int bucket);

 private:
  const RegenerationAuditOptions options_;
  const std::string windows_json_;  // options_.window_by_flow as {"flow": seconds}
  const std::shared_ptr<Metrics> metrics_;
  // Per bucket audited, the later keys (row ids) of its last pass: those
  // are counted; a key leaves the set when it leaves the window.
  std::map<int, std::set<std::int64_t>> seen_;
};

}  // namespace phasekey::workers

#endif  // PHASEKEY_SRC_WORKERS_KEY_AUDIT_H_
