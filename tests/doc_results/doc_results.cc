#include "doc_results.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "capacity_doc.h"
#include "support/benchmark_json.h"

namespace phasekey::doc_results {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Begin(const std::string& name) { return "<!-- generated:" + name + " -->"; }
std::string End(const std::string& name) { return "<!-- /generated:" + name + " -->"; }

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `text` to a temporary file beside `path`, then renames it over.
void WriteFileAtomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw std::runtime_error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

json ReadJson(const fs::path& path) {
  json j = json::parse(ReadFile(path), nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path.string() + " is not JSON");
  return j;
}

// A Google Benchmark results file (NaN and inf read as null).
json ReadBenchmarkJson(const fs::path& path) {
  json j = testing::ParseBenchmarkJson(ReadFile(path));
  if (j.is_discarded()) throw std::runtime_error(path.string() + " is not JSON");
  return j;
}

// One JSON object per line; blank lines are skipped.
std::vector<json> ReadJsonLines(const fs::path& path) {
  std::vector<json> out;
  std::istringstream in(ReadFile(path));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error(fmt::format("{}:{} is not JSON", path.string(), n));
    out.push_back(std::move(j));
  }
  return out;
}

// A crash matrix cell: its result, then what the run saw that matters.
std::string CrashCell(const json& cell, bool row_dies_in_worker) {
  std::string text = cell.at("result").get<std::string>();
  std::vector<std::string> notes;
  if (cell.at("dies") == "worker" && !row_dies_in_worker) {
    notes.push_back(fmt::format("the worker dies there, re-driving the key a service dying at {} left",
                                cell.at("left_by").get<std::string>()));
  }
  const int deliveries = cell.at("receipt_deliveries").get<int>();
  if (deliveries != 1) {
    notes.push_back(fmt::format("receipt job delivered {} times, sent {}", deliveries,
                                cell.at("receipts_sent").get<int>() == 1
                                    ? std::string("once")
                                    : std::to_string(cell.at("receipts_sent").get<int>()) + " times"));
  }
  for (std::size_t i = 0; i < notes.size(); ++i) text += (i == 0 ? " (" : "; ") + notes[i];
  return notes.empty() ? text : text + ")";
}

std::string RenderCrashMatrix(const json& m) {
  std::string out = "| crash point | client retry | re-drive worker |\n|---|---|---|\n";
  int cells = 0, ok = 0;
  for (const json& c : m.at("cases")) {
    const bool in_worker = c.at("client_retry").at("dies") == "worker";
    out += fmt::format("| {}{} | {} | {} |\n", c.at("point").get<std::string>(), in_worker ? " (worker)" : "",
                       CrashCell(c.at("client_retry"), in_worker), CrashCell(c.at("redrive"), in_worker));
    for (const char* col : {"client_retry", "redrive"}) {
      ++cells;
      if (c.at(col).at("result") == "ok") ++ok;
    }
  }
  out += fmt::format("\n{} crash points, {} recoveries, {} ok (written by `{}`).\n", m.at("cases").size(), cells, ok,
                     m.at("test").get<std::string>());
  return out;
}

// "kill 3, restart 3" from a {"kind": count} object; "none" when empty.
std::string Counts(const json& counts) {
  std::string out;
  for (const auto& [kind, n] : counts.items())
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", kind, n.get<int>());
  return out.empty() ? "none" : out;
}

// The history checker's figures (tests/history/history_test.cc), one row per
// run whose file exists: the unmodified runs, then each planted bug.
std::string RenderHistoryRuns(const std::filesystem::path& dir) {
  std::string out =
      "| run | keys | attempts (answered) | charges | faults | gateway operations | checker |\n"
      "|---|---|---|---|---|---|---|\n";
  const std::pair<const char*, const char*> runs[] = {{"none", "unmodified"},
                                                      {"many", "unmodified, 2 services + 2 workers"},
                                                      {"replay_reruns", "planted: `replay_reruns`"},
                                                      {"new_provider_key", "planted: `new_provider_key`"},
                                                      {"finish_drops_response", "planted: `finish_drops_response`"},
                                                      {"nemesis_pause", "a service paused past its lease"},
                                                      {"nemesis_db-restart", "PostgreSQL restarted (immediate)"},
                                                      {"nemesis_partition", "the database cut off (iptables)"},
                                                      {"nemesis_clock-jump", "the services' clock jumped 1 h"},
                                                      {"no_fencing", "planted: `no_fencing`, a service paused"},
                                                      {"soak", "the soak"}};
  for (const auto& [file, label] : runs) {
    const std::filesystem::path path = dir / fmt::format("history_{}.json", file);
    if (!std::filesystem::exists(path)) continue;
    const json r = ReadJson(path);
    const long long violations = r.at("violations").get<long long>();
    std::string name = label;
    if (std::string_view(file) == "soak" && r.contains("minutes") && r.contains("seed")) {
      name = fmt::format("the soak: {} min, seed {}, every nemesis", r.at("minutes").dump(), r.at("seed").dump());
    }
    out += fmt::format("| {} | {} | {} ({}) | {} | {} | {} | {} |\n", name, r.at("keys").get<long long>(),
                       r.at("attempts").get<long long>(), r.at("answered").get<long long>(),
                       r.at("charges").get<long long>(), Counts(r.at("faults")), Counts(r.at("gateway")),
                       violations == 0 ? std::string("pass")
                                       : fmt::format("FAIL: {} violations, first `{}`", violations,
                                                     r.at("first_violation").get<std::string>()));
  }
  return out;
}

std::string Seconds(double ms) { return fmt::format("{:.1f} s", ms / 1000); }

std::string RenderFailoverRuns(const std::vector<json>& runs) {
  std::string out =
      "| date (UTC) | commit | build | cores, load | switchover: unavailable (failed attempts) | primary killed: "
      "unavailable (failed attempts) | 503s / 409s / network errors over the run | requests | test time |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const json& r : runs) {
    out += fmt::format(
        "| {} | {} | {} | {}, {} | {} ({}) | {} ({}) | {} / {} / {} | {} | {} s |\n", r.at("date").get<std::string>(),
        r.at("commit").get<std::string>(), r.at("build").get<std::string>(), r.at("cores").get<int>(),
        r.at("load").get<std::string>(), Seconds(r.at("switchover_ms").get<double>()),
        r.at("switchover_failed").get<long long>(), Seconds(r.at("kill_ms").get<double>()),
        r.at("kill_failed").get<long long>(), r.at("503s").get<long long>(), r.at("409s").get<long long>(),
        r.at("network_errors").get<long long>(), r.at("requests").get<long long>(), r.at("test_s").get<long long>());
  }
  return out;
}

// "1.1 to 6.5 s" over every run's `field` (ms); one run: "1.1 s".
std::string Range(const std::vector<json>& runs, const std::string& field) {
  if (runs.empty()) throw std::runtime_error("failover.jsonl has no run");
  double lo = runs[0].at(field).get<double>(), hi = lo;
  for (const json& r : runs) {
    lo = std::min(lo, r.at(field).get<double>());
    hi = std::max(hi, r.at(field).get<double>());
  }
  if (Seconds(lo) == Seconds(hi)) return Seconds(lo);
  return fmt::format("{:.1f} to {}", lo / 1000, Seconds(hi));
}

// The console family's run (bench/console_bench.cc): one row per page depth,
// the console's request (connection included) beside its query alone.
std::string RenderConsolePages(const json& run) {
  std::map<std::string, json> by_name;  // "keys_page/first" -> its run
  for (const json& b : run.at("benchmarks")) {
    if (b.at("run_type") != "iteration") continue;
    std::string name = b.at("name").get<std::string>();
    name = name.substr(0, name.find("/iterations"));
    by_name[name.substr(name.find('/') + 1)] = b;
  }
  auto ms = [&](const std::string& variant, const std::string& where) {
    const json& b = by_name.at(variant + "/" + where);
    if (b.at("failures").get<double>() != 0) throw std::runtime_error("console.json: " + variant + " had failures");
    return fmt::format("{:.2f} / {:.2f}", b.at("p50_ms").get<double>(), b.at("p99_ms").get<double>());
  };
  std::string out =
      "| page | keys before it | console request (own connection + query), p50 / p99 ms | the query alone "
      "(held connection), p50 / p99 ms |\n|---|---|---|---|\n";
  for (const char* where : {"first", "middle", "last"}) {
    out += fmt::format("| {} | {:.0f} | {} | {} |\n", where,
                       by_name.at(std::string("keys_page/") + where).at("keys_before_page").get<double>(),
                       ms("keys_page", where), ms("keys_page_query", where));
  }
  const json& ctx = run.at("context");
  out += fmt::format(
      "\n{:.0f} keys, {} requests per row, one client; {} ({} mode, commit {}, {} online CPUs, load {} at start; "
      "docs/results/benchmarks/console.json).\n",
      by_name.at("keys_page/first").at("keys").get<double>(),
      static_cast<long long>(by_name.at("keys_page/first").at("requests").get<double>()),
      ctx.at("date").get<std::string>(), ctx.at("phasekey.mode").get<std::string>(),
      ctx.at("phasekey.commit").get<std::string>(), ctx.at("machine.online_cpus").get<std::string>(),
      ctx.at("machine.loadavg_at_start").get<std::string>());
  return out;
}

// The median of `values` (not empty).
double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The durability family's ride flow through a transaction pooler
// (bench/durability_bench.cc): rides per second, the median over the run's
// repetitions as bench_report takes it, prepared straight to the server,
// unprepared straight to the server, and unprepared through PgBouncer, each
// as a share of the first.
std::string RenderPoolerRows(const json& run) {
  std::map<std::string, std::vector<double>> rps;  // "phasekey/clients:16" -> each repetition's
  for (const json& b : run.at("benchmarks")) {
    if (b.at("run_type") != "iteration" || !b.contains("rps")) continue;
    std::string name = b.at("name").get<std::string>();
    name = name.substr(0, name.find("/iterations"));
    rps[name.substr(name.find('/') + 1)].push_back(b.at("rps").get<double>());
  }
  auto median = [&](const std::string& variant, int clients) {
    auto it = rps.find(fmt::format("{}/clients:{}", variant, clients));
    if (it == rps.end())
      throw std::runtime_error(fmt::format("durability.json has no {} at {} clients", variant, clients));
    return Median(it->second);
  };
  std::string out =
      "| clients | prepared, straight to the server: rides/s | unprepared, straight to the server: rides/s (share) | "
      "unprepared, through PgBouncer 1.18 in transaction mode: rides/s (share) |\n|---:|---:|---:|---:|\n";
  for (int clients : {1, 4, 16}) {
    const double prepared = median("phasekey", clients), unprepared = median("phasekey_unprepared", clients),
                 pooled = median("phasekey_pgbouncer", clients);
    out += fmt::format("| {} | {:.0f} | {:.0f} ({:.2f}) | {:.0f} ({:.2f}) |\n", clients, prepared, unprepared,
                       unprepared / prepared, pooled, pooled / prepared);
  }
  const json& ctx = run.at("context");
  out += fmt::format(
      "\nThe ride flow of the durability family, {} ({} mode, commit {}, {} online CPUs, load {} at start; "
      "docs/results/benchmarks/durability.json).\n",
      ctx.at("date").get<std::string>(), ctx.at("phasekey.mode").get<std::string>(),
      ctx.at("phasekey.commit").get<std::string>(), ctx.at("machine.online_cpus").get<std::string>(),
      ctx.at("machine.loadavg_at_start").get<std::string>());
  return out;
}

}  // namespace

fs::path ResultsDir(const fs::path& source_dir) { return source_dir / "docs" / "results"; }

void WriteResult(const fs::path& source_dir, const std::string& name, const json& result) {
  fs::create_directories(ResultsDir(source_dir));
  WriteFileAtomically(ResultsDir(source_dir) / name, result.dump(2) + "\n");
}

void RecordResult(const fs::path& source_dir, const fs::path& binary_dir, const std::string& name, const json& result) {
  const char* record = std::getenv("PHASEKEY_RECORD_TO_DOCS");
  if (record != nullptr && std::string_view(record) == "1") {
    WriteResult(source_dir, name, result);
    RenderDocs(source_dir);
    return;
  }
  fs::create_directories(binary_dir / "results");
  WriteFileAtomically(binary_dir / "results" / name, result.dump(2) + "\n");
}

std::vector<Section> RenderSections(const fs::path& source_dir, Missing missing) {
  const fs::path dir = ResultsDir(source_dir);
  // False when `file` is missing and may be.
  auto present = [&](const char* file) { return missing == Missing::kFail || fs::exists(dir / file); };
  std::vector<Section> out;
  try {
    if (present("crash_matrix.json")) {
      out.push_back(
          {"docs/reliability.md", "crash_matrix", "\n" + RenderCrashMatrix(ReadJson(dir / "crash_matrix.json"))});
    }
    if (present("malformed_requests.json")) {
      out.push_back({"docs/reliability.md", "malformed_requests",
                     std::to_string(ReadJson(dir / "malformed_requests.json").at("cases").get<int>())});
    }
    if (present("history_none.json")) {
      out.push_back({"docs/reliability.md", "history_runs", "\n" + RenderHistoryRuns(dir)});
    }
    if (present("failover.jsonl")) {
      const std::vector<json> failover = ReadJsonLines(dir / "failover.jsonl");
      out.push_back({"docs/deployment.md", "failover_runs", "\n" + RenderFailoverRuns(failover)});
      out.push_back({"docs/deployment.md", "failover_switchover", Range(failover, "switchover_ms")});
      out.push_back({"docs/deployment.md", "failover_kill", Range(failover, "kill_ms")});
    }
    if (present("benchmarks/console.json")) {
      out.push_back({"docs/console.md", "console_pages",
                     "\n" + RenderConsolePages(ReadBenchmarkJson(dir / "benchmarks" / "console.json"))});
    }
    if (present("benchmarks/capacity.json")) {
      for (Section& s : RenderCapacitySections(ReadBenchmarkJson(dir / "benchmarks" / "capacity.json"))) {
        out.push_back(std::move(s));
      }
    }
    if (present("benchmarks/durability.json")) {
      out.push_back({"docs/scaling.md", "pooler_rows",
                     "\n" + RenderPoolerRows(ReadBenchmarkJson(dir / "benchmarks" / "durability.json"))});
    }
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a result file in docs/results lacks a field: ") + e.what());
  }
  return out;
}

std::optional<std::string> SectionText(const std::string& markdown, const std::string& name) {
  const auto begin = markdown.find(Begin(name));
  if (begin == std::string::npos) return std::nullopt;
  const auto from = begin + Begin(name).size();
  const auto end = markdown.find(End(name), from);
  if (end == std::string::npos) return std::nullopt;
  return markdown.substr(from, end - from);
}

std::string ReplaceSection(const std::string& markdown, const std::string& name, const std::string& text) {
  const auto begin = markdown.find(Begin(name));
  const auto end = begin == std::string::npos ? begin : markdown.find(End(name), begin);
  if (end == std::string::npos) {
    throw std::runtime_error("no section " + Begin(name) + " ... " + End(name));
  }
  const auto from = begin + Begin(name).size();
  return markdown.substr(0, from) + text + markdown.substr(end);
}

void RenderDocs(const fs::path& source_dir) {
  fs::create_directories(ResultsDir(source_dir));
  const std::string lock_path = (ResultsDir(source_dir) / ".lock").string();
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    if (lock >= 0) ::close(lock);
    throw std::runtime_error("cannot lock " + lock_path);
  }
  try {
    std::map<std::string, std::string> docs;
    for (const Section& s : RenderSections(source_dir, Missing::kSkip)) {
      if (!docs.contains(s.doc)) docs[s.doc] = ReadFile(source_dir / s.doc);
      try {
        docs[s.doc] = ReplaceSection(docs[s.doc], s.name, s.text);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(s.doc + ": " + e.what());
      }
    }
    for (const auto& [doc, text] : docs) {
      if (ReadFile(source_dir / doc) != text) WriteFileAtomically(source_dir / doc, text);
    }
  } catch (...) {
    ::close(lock);  // also releases the lock
    throw;
  }
  ::close(lock);
}

}  // namespace phasekey::doc_results
