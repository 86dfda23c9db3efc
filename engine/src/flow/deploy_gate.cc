// Implements phasekey/deploy_gate.h: the descriptions are checked and
// turned into {flow: [known points]}, and one named query
// (DeployGateStrandedKeys, sql/queries/deploy_gate.sql) counts the active
// keys of those flows at any other point.
#include "phasekey/deploy_gate.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <pqxx/pqxx>

#include "flow/stranded_rows.h"
#include "pg/with_connection.h"
#include "sql/sql_catalog.h"

namespace phasekey {
namespace {

// "flow description 2 ('create_ride')" or "flow description 2", for messages.
std::string Which(std::size_t i, const nlohmann::json& d) {
  std::string out = "flow description " + std::to_string(i + 1);
  if (d.is_object() && d.contains("name") && d["name"].is_string()) out += " ('" + d["name"].get<std::string>() + "')";
  return out;
}

// The points of one description: its "points" (strings), the keys of
// "renamed" (values strings) and of "retired" (values strings or null), and
// kFinished. InvalidArgument naming the member at fault otherwise.
Status KnownPointsOf(std::size_t i, const nlohmann::json& d, std::set<std::string>* out) {
  const std::string which = Which(i, d);
  if (!d.contains("points") || !d["points"].is_array())
    return Status::InvalidArgument(which + ": \"points\" must be an array of recovery points");
  for (const auto& p : d["points"]) {
    if (!p.is_string() || p.get<std::string>().empty()) {
      return Status::InvalidArgument(which + ": \"points\" holds " + p.dump() + ", not a recovery point's name");
    }
    out->insert(p.get<std::string>());
  }
  for (const char* member : {"renamed", "retired"}) {
    if (!d.contains(member)) continue;
    if (!d[member].is_object()) return Status::InvalidArgument(which + ": \"" + member + "\" must be an object");
    for (const auto& [point, target] : d[member].items()) {
      const bool target_ok = target.is_string() || (target.is_null() && std::string(member) == "retired");
      if (point.empty() || !target_ok) {
        return Status::InvalidArgument(
            which + ": \"" + member + "\" maps '" + point + "' to " + target.dump() +
            (std::string(member) == "renamed" ? ", not a point's name" : ", not a point's name or null"));
      }
      out->insert(point);
    }
  }
  out->insert(std::string(kFinished.name()));
  return Status::OK();
}

// {flow: [known points]} from the descriptions; InvalidArgument for a
// malformed one or a flow described twice.
Result<nlohmann::json> KnownPointsByFlow(const std::vector<nlohmann::json>& flows) {
  nlohmann::json by_flow = nlohmann::json::object();
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const nlohmann::json& d = flows[i];
    if (!d.is_object()) return Status::InvalidArgument(Which(i, d) + ": not a JSON object");
    if (!d.contains("name") || !d["name"].is_string() || d["name"].get<std::string>().empty()) {
      return Status::InvalidArgument(Which(i, d) + ": \"name\" must be the flow's name");
    }
    const std::string name = d["name"].get<std::string>();
    if (by_flow.contains(name)) return Status::InvalidArgument("flow '" + name + "' is described twice");
    std::set<std::string> points;
    if (Status s = KnownPointsOf(i, d, &points); !s.ok()) return s;
    by_flow[name] = points;
  }
  return by_flow;
}

}  // namespace

Result<std::vector<StrandedPoint>> FindStrandedKeys(const std::string& database_url,
                                                    const std::vector<nlohmann::json>& flows) {
  auto known = KnownPointsByFlow(flows);
  if (!known) return known.error();
  std::vector<StrandedPoint> out;
  if (known->empty()) return out;
  Status s = pg::WithConnection(database_url, [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    for (const auto& r : pg::Exec(tx, sql::q::DeployGateStrandedKeys, known->dump())) {
      out.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::int64_t>(),
                     std::chrono::seconds(std::max<long long>(0, r[3].as<long long>()))});
    }
  });
  if (!s.ok()) return s;
  std::sort(out.begin(), out.end(), [](const StrandedPoint& a, const StrandedPoint& b) {
    return std::tie(a.flow, a.recovery_point) < std::tie(b.flow, b.recovery_point);
  });
  return out;
}

Result<std::vector<StrandedPoint>> FindStrandedKeys(const std::string& database_url,
                                                    const std::vector<std::shared_ptr<const Flow>>& flows) {
  std::vector<nlohmann::json> described;
  for (const auto& f : flows) described.push_back(f->Describe());
  return FindStrandedKeys(database_url, described);
}

namespace admin {

nlohmann::json StrandedRows(const std::vector<StrandedPoint>& points) {
  nlohmann::json rows = nlohmann::json::array();
  for (const StrandedPoint& p : points) {
    rows.push_back({{"flow", p.flow},
                    {"recovery_point", p.recovery_point},
                    {"keys", p.keys},
                    {"longest_wait_s", p.longest_wait.count()}});
  }
  return rows;
}

}  // namespace admin
}  // namespace phasekey
