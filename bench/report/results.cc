#include "report/results.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/benchmark_json.h"

namespace phasekey::bench::report {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

// Keys of a benchmark entry that are not counters.
bool IsStandardKey(const std::string& k) {
  static const char* kKeys[] = {"name",
                                "family_index",
                                "per_family_instance_index",
                                "run_name",
                                "run_type",
                                "repetitions",
                                "repetition_index",
                                "threads",
                                "iterations",
                                "real_time",
                                "cpu_time",
                                "time_unit",
                                "error_occurred",
                                "error_message",
                                "aggregate_name",
                                "aggregate_unit",
                                "bytes_per_second",
                                "items_per_second",
                                "label"};
  return std::find(std::begin(kKeys), std::end(kKeys), k) != std::end(kKeys);
}

// A part of a run's name that Google Benchmark appends to the benchmark's
// own ("iterations:1", "repeats:3", "manual_time", ...).
bool IsHarnessSuffix(const std::string& part) {
  for (const char* prefix : {"iterations:", "repeats:", "min_time:", "min_warmup_time:", "threads:"}) {
    if (part.rfind(prefix, 0) == 0) return true;
  }
  return part == "manual_time" || part == "real_time" || part == "process_time";
}

}  // namespace

double Run::Counter(const std::string& key) const {
  auto it = counters.find(key);
  return it == counters.end() ? 0 : it->second;
}

const Run* Family::Find(const std::string& variant, const std::string& param) const {
  const std::string want = name + "/" + variant + "/" + param;
  for (const Run& r : runs) {
    if (r.name == want) return &r;
  }
  return nullptr;
}

std::string Family::Context(const std::string& key) const {
  auto it = context.find(key);
  return it == context.end() ? "" : it->second;
}

std::optional<Family> ReadFamily(const std::string& dir, const std::string& family, std::string* why) {
  std::ifstream in(dir + "/" + family + ".json");
  if (!in) {
    *why = "no results file " + dir + "/" + family + ".json";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc = testing::ParseBenchmarkJson(text.str());
  if (doc.is_discarded() || !doc.contains("benchmarks")) {
    *why = "results file " + dir + "/" + family + ".json is incomplete (the run was interrupted?)";
    return std::nullopt;
  }
  Family f;
  f.name = family;
  for (const auto& [k, v] : doc["context"].items()) f.context[k] = v.is_string() ? v.get<std::string>() : v.dump();
  // Repetitions of one run, in first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<nlohmann::json>> reps;
  for (const auto& b : doc["benchmarks"]) {
    if (b.value("run_type", "iteration") != "iteration") continue;
    const std::string name = b.value("run_name", b.value("name", ""));
    if (!reps.count(name)) order.push_back(name);
    reps[name].push_back(b);
  }
  for (const std::string& name : order) {
    Run r;
    // "family/variant/param" (a variant may hold '/' itself, as the http
    // family's "deployed/gateway:tls/latency_ms:20/pool:on") without Google
    // Benchmark's suffixes ("/iterations:1/repeats:3/manual_time").
    r.parts = Split(name, '/');
    while (r.parts.size() > 3 && IsHarnessSuffix(r.parts.back())) r.parts.pop_back();
    for (const auto& p : r.parts) r.name += (r.name.empty() ? "" : "/") + p;
    std::map<std::string, std::vector<double>> values;
    std::vector<double> times, bps;
    for (const auto& b : reps[name]) {
      if (b.value("error_occurred", false)) {
        r.error = b.value("error_message", "failed");
        continue;
      }
      ++r.repetitions;
      times.push_back(b.value("real_time", 0.0));
      if (b.contains("bytes_per_second")) bps.push_back(b["bytes_per_second"].get<double>());
      r.time_unit = b.value("time_unit", "");
      for (const auto& [k, v] : b.items()) {
        if (!IsStandardKey(k) && v.is_number()) values[k].push_back(v.get<double>());
      }
    }
    if (r.repetitions > 0) r.error.clear();  // some repetitions worked
    r.real_time = Median(times);
    r.bytes_per_second = Median(bps);
    for (auto& [k, v] : values) r.counters[k] = Median(v);
    f.runs.push_back(std::move(r));
  }
  return f;
}

}  // namespace phasekey::bench::report
