#include "chaos/processes.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include "chaos/client.h"

namespace ride_booking {
namespace {

using phasekey::Result;
using phasekey::Status;

constexpr std::size_t kExamplesPerKind = 2;

// One request line of a process's log, for a key of the run.
struct Line {
  std::string ts;  // ISO 8601 UTC with milliseconds: orders lines across processes
  std::size_t process = 0;
  std::string reply, point;
  long long attempt = 0;  // the key's claims so far
};

struct KeyRow {
  std::string key;
  std::string created;  // stamped like the log lines
  bool finished = false;
};

// The run's key rows by id.
Result<std::map<long long, KeyRow>> LoadKeyIds(const std::string& db_url, const std::string& first_key) {
  const ChaosRunKeyBounds b = ChaosBoundsOf(first_key);
  std::map<long long, KeyRow> keys;
  try {
    pqxx::connection conn(db_url);
    pqxx::nontransaction tx(conn);
    for (const auto& row :
         tx.exec_params(std::string("SELECT id, idempotency_key, "
                                    "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
                                    "state = 'finished' FROM phasekey.idempotency_keys WHERE ") +
                            kChaosRunKeys,
                        b.from, b.to, b.booking_from, b.booking_to)) {
      keys[row[0].as<long long>()] = KeyRow{row[1].as<std::string>(), row[2].as<std::string>(), row[3].as<bool>()};
    }
  } catch (const std::exception& e) {
    return Status::FailedPrecondition(std::string("reading the run's key ids: ") + e.what());
  }
  return keys;
}

// Counts the request lines of process `p` in *row and appends those for the
// run's keys to *by_key; counts request lines that do not parse.
Status ReadLog(const std::string& path, std::size_t p, const std::map<long long, KeyRow>& keys, ChaosProcessRow* row,
               std::map<long long, std::vector<Line>>* by_key, long long* unreadable) {
  std::ifstream in(path);
  if (!in) return Status::FailedPrecondition("cannot read " + path);
  std::string text;
  while (std::getline(in, text)) {
    if (text.find("\"msg\":\"request\"") == std::string::npos) continue;
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("key_id") || !j["key_id"].is_number_integer() || !j.contains("reply") ||
        !j["reply"].is_string() || !j.contains("ts") || !j["ts"].is_string()) {
      ++*unreadable;
      continue;
    }
    ++row->answered;
    const long long id = j["key_id"].get<long long>();
    if (keys.find(id) == keys.end()) continue;  // a replay or a 409 (id 0)
    (*by_key)[id].push_back(Line{j["ts"].get<std::string>(), p, j["reply"].get<std::string>(),
                                 j.value("recovery_point", ""), j.value("attempt", 0LL)});
  }
  return Status::OK();
}

// Whether the line shows its process letting go of the key after
// committing a phase of it.
bool Released(const Line& l) {
  return (l.reply == "retry_later" || l.reply == "internal_error") && !l.point.empty() && l.point != "started";
}

// The processes killed between `from` and `to` (log stamps).
std::vector<std::size_t> KilledBetween(const std::vector<ChaosProcess>& processes, const std::string& from,
                                       const std::string& to) {
  std::vector<std::size_t> killed;
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const auto& times = processes[p].kill_times;
    if (std::any_of(times.begin(), times.end(), [&](const std::string& t) { return from <= t && t <= to; })) {
      killed.push_back(p);
    }
  }
  return killed;
}

// Attributes one finished key's start (see the header); counts it in *f.
void AttributeKey(long long id, const KeyRow& row, const std::vector<Line>& lines, const Line& finisher,
                  const std::vector<ChaosProcess>& processes, ChaosProcessFindings* f) {
  const std::string& finished_on = processes[finisher.process].name;
  auto example = [&](const std::string& started_on, const std::string& how) {
    const long long same_kind = how == "killed" ? f->handed_over_killed : f->handed_over_released;
    if (same_kind <= static_cast<long long>(kExamplesPerKind)) {
      f->examples.push_back(ChaosHandOver{id, row.key, started_on, how, finished_on});
    }
  };
  const auto released =
      std::find_if(lines.begin(), lines.end(), [&](const Line& l) { return Released(l) && l.ts <= finisher.ts; });
  if (released != lines.end()) {
    if (released->process == finisher.process) return;
    ++f->handed_over_released;
    example(processes[released->process].name, "released at " + released->point);
    return;
  }
  if (finisher.attempt < 2) return;  // its first claim finished it
  const std::vector<std::size_t> killed = KilledBetween(processes, row.created, finisher.ts);
  if (killed.size() != 1) {
    ++f->taken_over_unnamed;
    return;
  }
  if (killed[0] == finisher.process) return;
  ++f->handed_over_killed;
  example(processes[killed[0]].name, "killed");
}

}  // namespace

Result<ChaosProcessFindings> AttributeChaosRun(const std::string& db_url, const std::string& first_key,
                                               const std::vector<ChaosProcess>& processes) {
  auto keys = LoadKeyIds(db_url, first_key);
  if (!keys) return keys.error();
  ChaosProcessFindings f;
  std::map<long long, std::vector<Line>> by_key;
  for (std::size_t p = 0; p < processes.size(); ++p) {
    const ChaosProcess& proc = processes[p];
    f.rows.push_back(ChaosProcessRow{proc.name, proc.service, proc.kills, 0, 0});
    if (Status s = ReadLog(proc.log_path, p, *keys, &f.rows.back(), &by_key, &f.unreadable_lines); !s.ok()) {
      return s;
    }
  }
  std::set<long long> finished_by_a_line;
  for (auto& [id, lines] : by_key) {
    std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.ts < b.ts; });
    const auto finisher =
        std::find_if(lines.begin(), lines.end(), [](const Line& l) { return l.reply == "completed"; });
    if (finisher == lines.end()) continue;
    ++f.rows[finisher->process].finished;
    finished_by_a_line.insert(id);
    AttributeKey(id, keys->at(id), lines, *finisher, processes, &f);
  }
  for (const auto& [id, row] : *keys) {
    if (row.finished && finished_by_a_line.count(id) == 0) ++f.finished_unattributed;
  }
  return f;
}

void PrintChaosProcesses(std::FILE* out, const ChaosProcessFindings& f) {
  std::fprintf(out, "by process (their request logs, the key rows, the kills)\n");
  std::fprintf(out, "  %-12s %5s %9s %9s\n", "process", "kills", "answered", "finished");
  for (const ChaosProcessRow& r : f.rows) {
    std::fprintf(out, "  %-12s %5d %9lld %9lld%s\n", r.name.c_str(), r.kills, r.answered, r.finished,
                 r.service ? "" : "  (re-drives)");
  }
  std::fprintf(out, "  started on one process, finished on another %5lld  (released %lld, holder killed %lld)\n",
               f.handed_over(), f.handed_over_released, f.handed_over_killed);
  for (const ChaosHandOver& h : f.examples) {
    std::fprintf(out, "    key %lld (%s): started on %s (%s), finished on %s\n", h.key_id, h.key.c_str(),
                 h.started_on.c_str(), h.how.c_str(), h.finished_on.c_str());
  }
  std::fprintf(out, "  taken over from a killed holder not named    %5lld  (two or more kills in its life)\n",
               f.taken_over_unnamed);
  std::fprintf(out, "  finished, no completion logged               %5lld  (finisher killed before its line)\n",
               f.finished_unattributed);
  if (f.unreadable_lines > 0) std::fprintf(out, "  unreadable request lines %lld\n", f.unreadable_lines);
}

}  // namespace ride_booking
