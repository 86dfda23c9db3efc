// Implements flow/flow_masks.h with the named queries FlowMasksRecord and
// FlowMasksLoad (sql/queries/flow_masks.sql). Pointers travel as JSON, so
// no text[] literal is built here.
#include "flow/flow_masks.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "pg/statements.h"
#include "sql/sql_catalog.h"

namespace phasekey::flow {

Status RecordFlowMasks(pqxx::transaction_base& tx, const std::vector<std::shared_ptr<const Flow>>& flows) {
  nlohmann::json by_flow = nlohmann::json::object();
  for (const auto& f : flows) {
    if (by_flow.contains(f->name())) {
      return Status::InvalidArgument("flow '" + f->name() + "' is given twice: whose masked fields to record?");
    }
    by_flow[f->name()] = f->masked();
  }
  if (by_flow.empty()) return Status::OK();
  pg::Exec(tx, sql::q::FlowMasksRecord, by_flow.dump());
  return Status::OK();
}

std::map<std::string, std::vector<std::string>> LoadFlowMasks(pqxx::transaction_base& tx) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& r : pg::Exec(tx, sql::q::FlowMasksLoad)) {
    out[r[0].as<std::string>()] = nlohmann::json::parse(r[1].as<std::string>()).get<std::vector<std::string>>();
  }
  return out;
}

}  // namespace phasekey::flow
