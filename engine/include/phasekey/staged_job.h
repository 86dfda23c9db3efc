// Staged jobs: the transactional outbox.
//
// An atomic phase stages a job in its own transaction with StageJob(); the
// job exists only if that transaction commits. The Enqueuer (workers.h)
// later hands staged jobs to a JobSink and deletes them only after the sink
// accepted them: at-least-once delivery, never a job deleted unhanded.
#ifndef PHASEKEY_STAGED_JOB_H_
#define PHASEKEY_STAGED_JOB_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <pqxx/transaction>

#include "phasekey/flow.h"
#include "phasekey/status.h"

namespace phasekey {

// A staged job as the enqueuer reads it back for a JobSink.
struct StagedJob {
  std::int64_t id = 0;     // unique in the database, never reused: a sink's dedup key
  std::string name;        // as given to StageJob(): what to do
  nlohmann::json args;     // as given to StageJob(): with what
  std::string created_at;  // database time, text
};

// Stages a job in the atomic phase's transaction, in the bucket of the
// phase's key (so on its shard). Returns the job id. Throws libpqxx
// exceptions like any statement of the phase; the engine classifies them.
std::int64_t StageJob(AtomicContext& ctx, std::string_view name, const nlohmann::json& args);

// The same in `tx` and `bucket` (AccountBucket of the row's account), for
// code outside a phase; `tx`'s connection must have the engine's statements
// prepared.
std::int64_t StageJob(pqxx::transaction_base& tx, int bucket, std::string_view name, const nlohmann::json& args);

// Where the enqueuer hands jobs. Deliver() is called from an enqueuer thread
// with the batch's rows locked; it returns OK only when every job of the
// batch is durably accepted (then they are deleted), anything else keeps
// them all staged for the next attempt. A job may be delivered twice (the
// commit after a successful Deliver can fail): sinks must tolerate repeats,
// e.g. by the job id.
class JobSink {
 public:
  virtual ~JobSink() = default;
  // Accepts `jobs` (one batch of one bucket, never empty, in no promised
  // order) durably, or returns why not (see above).
  virtual Status Deliver(const std::vector<StagedJob>& jobs) = 0;
};

}  // namespace phasekey

#endif  // PHASEKEY_STAGED_JOB_H_
