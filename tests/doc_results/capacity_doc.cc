#include "capacity_doc.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace phasekey::doc_results {
namespace {

using nlohmann::json;

constexpr double kSecondsPerDay = 86400;
// The load of the worked example: an assumption, not a measurement.
constexpr double kExampleRequestsPerSecond = 200;

// The key row states the family measures, in the order of the table, and
// what each row is.
constexpr std::pair<const char*, const char*> kStates[] = {
    {"active_first_point",
     "active at its first stored point (`ride_created`), in flight: lease held, request body stored"},
    {"active_outcome_recorded",
     "active mid-flow (`charge_created`): the charge's outcome recorded, request body stored, released after a "
     "failure"},
    {"finished", "finished: request body dropped, response and outcomes kept"},
    {"dead", "dead (given up at `started`): request body kept"},
    {"needs_operator", "needs_operator (parked at `ride_created`): request body kept"},
};

// The family's runs by name without "capacity/" and the Google Benchmark
// suffix ("rows/finished", "wal/ride", "table/finished_keys:1000000").
class Runs {
 public:
  explicit Runs(const json& run) {
    for (const json& b : run.at("benchmarks")) {
      if (b.at("run_type") != "iteration") continue;
      std::string name = b.at("name").get<std::string>();
      name = name.substr(0, name.find("/iterations"));
      by_name_[name.substr(name.find('/') + 1)] = b;
    }
  }

  // The run `name`; throws when it is missing or failed.
  const json& At(const std::string& name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) throw std::runtime_error("capacity.json has no run " + name);
    if (it->second.value("error_occurred", false)) {
      throw std::runtime_error("capacity.json: " + name + " failed: " + it->second.value("error_message", ""));
    }
    return it->second;
  }

  double Counter(const std::string& name, const std::string& counter) const {
    return At(name).at(counter).get<double>();
  }

  // The run whose name starts with `prefix` ("table/").
  std::string NameStartingWith(const std::string& prefix) const {
    for (const auto& [name, b] : by_name_) {
      if (name.rfind(prefix, 0) == 0) return name;
    }
    throw std::runtime_error("capacity.json has no run " + prefix + "...");
  }

  const std::map<std::string, json>& all() const { return by_name_; }

 private:
  std::map<std::string, json> by_name_;
};

// Bytes in binary units, one decimal.
std::string Human(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kUnits[unit]);
}

// "12 / 40": a plaintext figure and its sealed counterpart.
std::string PlainSealed(const Runs& runs, const std::string& state, const std::string& counter) {
  return fmt::format("{:.0f} / {:.0f}", runs.Counter("rows/" + state, counter),
                     runs.Counter("rows_sealed/" + state, counter));
}

// The indexes a row enters, with its bytes in each: "pkey 61, reap 27".
std::string IndexesOf(const json& b) {
  std::string out;
  for (const auto& [key, value] : b.items()) {
    const std::string prefix = "index_bytes:";
    if (key.rfind(prefix, 0) != 0 || !value.is_number() || value.get<double>() < 0.5) continue;
    std::string name = key.substr(prefix.size());
    name = name.substr(0, name.rfind("_per_row"));
    out += fmt::format("{}`{}` {:.0f}", out.empty() ? "" : ", ", name, value.get<double>());
  }
  return out.empty() ? "none" : out;
}

std::string RenderRows(const Runs& runs) {
  std::string out =
      "| state | tuple bytes (`pg_column_size`), plain / sealed | table bytes per row, plain / sealed | TOAST bytes "
      "per row, plain / sealed | index bytes per row, plain / sealed | the indexes it is in (plain, bytes per row) | "
      "all of it per row, plain / sealed |\n|---|---:|---:|---:|---:|---|---:|\n";
  for (const auto& [state, what] : kStates) {
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", what, PlainSealed(runs, state, "tuple_bytes"),
                    PlainSealed(runs, state, "heap_bytes_per_row"), PlainSealed(runs, state, "toast_bytes_per_row"),
                    PlainSealed(runs, state, "index_bytes_per_row"), IndexesOf(runs.At(std::string("rows/") + state)),
                    PlainSealed(runs, state, "total_bytes_per_row"));
  }
  out += fmt::format(
      "\n{:.0f} copies of each state's row per measurement, in an emptied table; bytes per row are the growth of "
      "each relation over them, divided by their number.\n",
      runs.Counter("rows/finished", "rows"));
  return out;
}

std::string WalRow(const Runs& runs, const std::string& name, const std::string& what) {
  const json& b = runs.At(name);
  return fmt::format("| {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} | {:.0f} |\n", what,
                     b.at("wal_bytes_per_op").get<double>(), b.at("wal_fpi_bytes_per_op").get<double>(),
                     b.at("wal_key_table_bytes_per_op").get<double>(), b.at("wal_commit_bytes_per_op").get<double>(),
                     b.at("ops").get<double>());
}

std::string RenderWal(const Runs& runs, const json& context) {
  const double large = runs.Counter("wal_large/ride", "keys_in_table_before");
  std::string out =
      "| operation | WAL bytes per operation | of which full-page images | the key table's records (table and "
      "indexes, images apart) | commit records | operations |\n|---|---:|---:|---:|---:|---:|\n";
  out += WalRow(runs, "wal/ride", "ride, on an emptied key table");
  out += WalRow(runs, "wal_sealed/ride", "ride, bodies sealed, on an emptied key table");
  out += WalRow(runs, "wal_large/ride", fmt::format("ride, on a key table of {:.0f} keys", large));
  out += WalRow(runs, "wal/replay", "replay of a finished key (its stored response)");
  out += WalRow(runs, "wal/reap", "reaped key (the Reaper's DELETE)");
  out += fmt::format(
      "\nfull_page_writes={}; each ride run began with a `CHECKPOINT`. The rides on the emptied table left {:.0f} "
      "bytes of table per key written (their dead row versions included, before any vacuum), where a finished "
      "copy takes {:.0f}.\n",
      context.at("pg.full_page_writes").get<std::string>(), runs.Counter("wal/ride", "heap_bytes_per_key_written"),
      runs.Counter("rows/finished", "heap_bytes_per_row"));
  return out;
}

std::string RenderTable(const Runs& runs) {
  const std::string name = runs.NameStartingWith("table/");
  const json& b = runs.At(name);
  const double keys = b.at("keys").get<double>();
  std::string out = "| relation | bytes | size | bytes per key |\n|---|---:|---:|---:|\n";
  auto row = [&](const std::string& what, double bytes) {
    out += fmt::format("| {} | {:.0f} | {} | {:.1f} |\n", what, bytes, Human(bytes), bytes / keys);
  };
  row("`phasekey.idempotency_keys` (table)", b.at("heap_bytes").get<double>());
  row("its TOAST table and TOAST index", b.at("toast_bytes").get<double>());
  for (const auto& [key, value] : b.items()) {
    const std::string prefix = "index_bytes:";
    if (key.rfind(prefix, 0) != 0 || key.find("_per_key") != std::string::npos) continue;
    row("index `idempotency_keys_" + key.substr(prefix.size()) + "`", value.get<double>());
  }
  row("**all of it**", b.at("total_bytes").get<double>());
  out += fmt::format("\n{:.0f} finished keys.\n", keys);
  return out;
}

std::string RenderExample(const Runs& runs, const CapacityExample& e) {
  const double ride_floor =
      runs.Counter("wal/ride", "wal_bytes_per_op") - runs.Counter("wal/ride", "wal_fpi_bytes_per_op");
  const double reap_floor =
      runs.Counter("wal/reap", "wal_bytes_per_op") - runs.Counter("wal/reap", "wal_fpi_bytes_per_op");
  return fmt::format(
      "\nAt {rps:.0f} requests a second, each a new key that finishes, kept {hours:.0f} h (`ReaperOptions::"
      "retention`'s default, {ret:.0f} s):\n\n"
      "- finished keys in the table: {rps:.0f} × {ret:.0f} s = **{rows:.0f} keys**;\n"
      "- disk: {rows:.0f} × {bpk:.1f} bytes per key (table, TOAST and indexes at the table size measured) = "
      "**{disk}**; with bodies sealed, {extra} more ({per:.0f} bytes per finished row);\n"
      "- WAL a day: {rps:.0f} × {day:.0f} s × ({rf:.0f} bytes per ride + {pf:.0f} per reaped key, full-page images "
      "apart) = **{floor}** at least; with every ride paying the full-page images measured after a checkpoint on "
      "the large table ({rl:.0f} bytes per ride, {pl:.0f} per reaped key): **{ceil}**.\n",
      fmt::arg("rps", e.requests_per_s), fmt::arg("hours", e.retention_s / 3600), fmt::arg("ret", e.retention_s),
      fmt::arg("rows", e.finished_rows), fmt::arg("bpk", e.bytes_per_key), fmt::arg("disk", Human(e.disk_bytes)),
      fmt::arg("extra", Human(e.sealed_extra_bytes)),
      fmt::arg("per", e.finished_rows > 0 ? e.sealed_extra_bytes / e.finished_rows : 0),
      fmt::arg("day", kSecondsPerDay), fmt::arg("rf", ride_floor), fmt::arg("pf", reap_floor),
      fmt::arg("floor", Human(e.wal_floor_bytes_per_day)),
      fmt::arg("rl", runs.Counter("wal_large/ride", "wal_bytes_per_op")),
      fmt::arg("pl", runs.Counter("wal/reap", "wal_bytes_per_op")),
      fmt::arg("ceil", Human(e.wal_ceiling_bytes_per_day)));
}

std::string RenderRun(const Runs& runs, const json& context) {
  double lo = 1e9, hi = 0;
  for (const auto& [name, b] : runs.all()) {
    if (!b.contains("loadavg_1m")) continue;
    lo = std::min(lo, b.at("loadavg_1m").get<double>());
    hi = std::max(hi, b.at("loadavg_1m").get<double>());
  }
  auto ctx = [&](const char* key) { return context.at(key).get<std::string>(); };
  return fmt::format(
      "{} ({} mode, `{}`, commit {}; {} online CPUs, load average {} at the start and "
      "{:.2f} to {:.2f} (1 min) at the end of each measurement; PostgreSQL {}, shared_buffers={}, "
      "full_page_writes={}; docs/results/benchmarks/capacity.json)",
      ctx("date"), ctx("phasekey.mode"), ctx("phasekey.command"), ctx("phasekey.commit"), ctx("machine.online_cpus"),
      ctx("machine.loadavg_at_start"), lo, hi, ctx("pg.server_version"), ctx("pg.shared_buffers"),
      ctx("pg.full_page_writes"));
}

}  // namespace

CapacityExample ComputeCapacityExample(const json& run, double requests_per_s) {
  const Runs runs(run);
  CapacityExample e;
  e.requests_per_s = requests_per_s;
  e.retention_s = std::stod(run.at("context").at("phasekey.reaper_retention_s").get<std::string>());
  e.finished_rows = requests_per_s * e.retention_s;
  e.bytes_per_key = runs.Counter(runs.NameStartingWith("table/"), "total_bytes_per_key");
  e.disk_bytes = e.finished_rows * e.bytes_per_key;
  e.sealed_extra_bytes = e.finished_rows * (runs.Counter("rows_sealed/finished", "total_bytes_per_row") -
                                            runs.Counter("rows/finished", "total_bytes_per_row"));
  auto per_op = [&](const std::string& name, bool images) {
    const double all = runs.Counter(name, "wal_bytes_per_op");
    return images ? all : all - runs.Counter(name, "wal_fpi_bytes_per_op");
  };
  const double per_day = requests_per_s * kSecondsPerDay;
  e.wal_floor_bytes_per_day = per_day * (per_op("wal/ride", false) + per_op("wal/reap", false));
  e.wal_ceiling_bytes_per_day = per_day * (per_op("wal_large/ride", true) + per_op("wal/reap", true));
  return e;
}

std::vector<Section> RenderCapacitySections(const json& run) {
  const Runs runs(run);
  const json& context = run.at("context");
  const std::string doc = "docs/capacity.md";
  return {
      {doc, "capacity_run", RenderRun(runs, context)},
      {doc, "capacity_rows", "\n" + RenderRows(runs)},
      {doc, "capacity_wal", "\n" + RenderWal(runs, context)},
      {doc, "capacity_table", "\n" + RenderTable(runs)},
      {doc, "capacity_example", RenderExample(runs, ComputeCapacityExample(run, kExampleRequestsPerSecond))},
  };
}

}  // namespace phasekey::doc_results
