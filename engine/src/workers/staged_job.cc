#include "phasekey/staged_job.h"
#include "pg/statements.h"

namespace phasekey {

std::int64_t StageJob(pqxx::transaction_base& tx, int bucket, std::string_view name, const nlohmann::json& args) {
  return pg::Exec1(tx, sql::q::StagedJobInsert, std::string(name), args.dump(), bucket)[0].as<std::int64_t>();
}

std::int64_t StageJob(AtomicContext& ctx, std::string_view name, const nlohmann::json& args) {
  return StageJob(ctx.tx(), ctx.bucket(), name, args);
}

}  // namespace phasekey
