// The reaper's audit for key regeneration (phasekey/workers.h,
// RegenerationAuditOptions): which keys of a bucket repeat an earlier key's
// request within the flow's window, counted once each.
#ifndef PHASEKEY_SRC_WORKERS_KEY_AUDIT_H_
#define PHASEKEY_SRC_WORKERS_KEY_AUDIT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "pg/pool.h"
#include "phasekey/metrics.h"
#include "phasekey/status.h"
#include "phasekey/workers.h"

namespace phasekey::workers {

// Stateless between calls; the counted keys are in the database. Not
// thread-safe: one reaper thread runs it (several reapers may each have one).
class KeyAudit {
 public:
  KeyAudit(RegenerationAuditOptions options, std::shared_ptr<Metrics> metrics);

  // One pass over `bucket`'s recent keys (KeyAuditCountNew): each later key
  // of a pair that no audit counted before is recorded as counted, then
  // counted and logged; counted keys past the widest window are forgotten
  // (KeyAuditForget). Returns the keys counted.
  Result<std::size_t> Run(pg::Pool& pool, int bucket);

 private:
  const RegenerationAuditOptions options_;
  const std::string windows_json_;  // options_.window_by_flow as {"flow": seconds}
  const double widest_s_;           // the widest window, in seconds
  const std::shared_ptr<Metrics> metrics_;
};

}  // namespace phasekey::workers

#endif  // PHASEKEY_SRC_WORKERS_KEY_AUDIT_H_
