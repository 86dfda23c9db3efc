#include "phasekey/staged_job.h"

namespace phasekey {

std::int64_t StageJob(pqxx::work& tx, std::string_view name, const nlohmann::json& args) {
  return tx.exec_prepared1("StagedJobInsert", std::string(name), args.dump())[0].as<std::int64_t>();
}

}  // namespace phasekey
