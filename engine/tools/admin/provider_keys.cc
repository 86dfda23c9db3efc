// Implements phasekey/tools/provider_keys.h: the descriptions become {flow:
// [foreign phases]}, and one named query (ReconcileKeysSince,
// sql/queries/reconcile.sql) reads the keys that may have called since then.
#include "phasekey/tools/provider_keys.h"

#include <pqxx/pqxx>

#include "pg/statements.h"
#include "pg/with_connection.h"
#include "sql/sql_catalog.h"

namespace phasekey {
namespace {

using ForeignPhasesByFlow = std::map<std::string, std::vector<std::string>>;

// {flow: [foreign phases]}; InvalidArgument naming the description at fault.
Result<ForeignPhasesByFlow> ForeignPhasesOf(const std::vector<nlohmann::json>& described) {
  ForeignPhasesByFlow out;
  for (std::size_t i = 0; i < described.size(); ++i) {
    const nlohmann::json& d = described[i];
    const std::string which = "flow description " + std::to_string(i + 1);
    if (!d.is_object() || !d.contains("name") || !d["name"].is_string() || d["name"].get<std::string>().empty()) {
      return Status::InvalidArgument(which + ": not an object with the flow's \"name\"");
    }
    const std::string name = d["name"].get<std::string>();
    if (!d.contains("foreign_phases") || !d["foreign_phases"].is_array()) {
      return Status::InvalidArgument(which + " ('" + name +
                                     "'): no \"foreign_phases\" array (describe the flows again with this version)");
    }
    std::vector<std::string> phases;
    for (const auto& p : d["foreign_phases"]) {
      if (!p.is_string() || p.get<std::string>().empty()) {
        return Status::InvalidArgument(which + " ('" + name + "'): \"foreign_phases\" holds " + p.dump() +
                                       ", not a phase's name");
      }
      phases.push_back(p.get<std::string>());
    }
    if (!out.emplace(name, std::move(phases)).second) {
      return Status::InvalidArgument("flow '" + name + "' is described twice");
    }
  }
  return out;
}

}  // namespace

Result<ProviderKeyInventory> ProviderKeysSince(const std::string& database_url,
                                               std::chrono::system_clock::time_point since,
                                               const std::vector<nlohmann::json>& described) {
  auto phases = ForeignPhasesOf(described);
  if (!phases) return phases.error();
  const double since_s = std::chrono::duration<double>(since.time_since_epoch()).count();
  ProviderKeyInventory out;
  Status s = pg::WithConnection(database_url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    for (const auto& r : pg::Exec(tx, sql::q::ReconcileKeysSince, since_s)) {
      KeyProviderKeys key{
          r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(), r[3].as<std::string>(), {}};
      const auto flow = phases->find(key.flow);
      if (flow == phases->end()) {
        ++out.undescribed[key.flow];
        continue;
      }
      for (const std::string& phase : flow->second) key.provider_keys.push_back(key.stable_id + ":" + phase);
      out.keys.push_back(std::move(key));
    }
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace phasekey
