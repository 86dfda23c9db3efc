#include "fake_gateway/faults.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace fake_gateway {
namespace {

using nlohmann::json;

std::optional<std::string> MergeMember(const std::string& name, const json& value, Faults* faults) {
  if (name == "latency_ms") {
    if (!value.is_number_integer()) return "latency_ms must be an integer";
    faults->latency_ms = value.get<int64_t>();
  } else if (name == "fail_rate" || name == "drop_response_rate" || name == "lookup_fail_rate") {
    if (!value.is_number()) return fmt::format("{} must be a number", name);
    double* rate = name == "fail_rate"            ? &faults->fail_rate
                   : name == "drop_response_rate" ? &faults->drop_response_rate
                                                  : &faults->lookup_fail_rate;
    *rate = value.get<double>();
  } else {
    return fmt::format("unknown member {}", json(name).dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> ValidateFaults(const Faults& faults) {
  auto rate_ok = [](double rate) { return rate >= 0.0 && rate <= 1.0; };  // false for NaN
  if (!rate_ok(faults.fail_rate)) return "fail_rate must be within [0, 1]";
  if (!rate_ok(faults.drop_response_rate)) return "drop_response_rate must be within [0, 1]";
  if (!rate_ok(faults.lookup_fail_rate)) return "lookup_fail_rate must be within [0, 1]";
  if (faults.latency_ms < 0 || faults.latency_ms > kMaxLatencyMs) {
    return fmt::format("latency_ms must be within [0, {}]", kMaxLatencyMs);
  }
  return std::nullopt;
}

std::optional<std::string> MergeFaultsJson(std::string_view body, Faults* faults) {
  json value = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) return "the body must be a JSON object";
  Faults merged = *faults;
  for (const auto& [name, member] : value.items()) {
    if (auto error = MergeMember(name, member, &merged)) return error;
  }
  if (auto error = ValidateFaults(merged)) return error;
  *faults = merged;
  return std::nullopt;
}

std::string FaultsJson(const Faults& faults) {
  nlohmann::ordered_json json = {{"fail_rate", faults.fail_rate},
                                 {"drop_response_rate", faults.drop_response_rate},
                                 {"latency_ms", faults.latency_ms},
                                 {"lookup_fail_rate", faults.lookup_fail_rate}};
  return json.dump();
}

}  // namespace fake_gateway
