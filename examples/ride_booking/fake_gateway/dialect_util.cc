#include "fake_gateway/dialect_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fake_gateway/form.h"

namespace fake_gateway {

std::optional<nlohmann::json> ParseJsonObject(std::string_view body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  return json;
}

std::string StringAt(const nlohmann::json& j, std::initializer_list<std::string_view> path) {
  const nlohmann::json* at = &j;
  for (std::string_view key : path) {
    if (!at->is_object()) return "";
    auto it = at->find(std::string(key));
    if (it == at->end()) return "";
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : "";
}

std::optional<int64_t> MinorAmount(const nlohmann::json& value) {
  if (!value.is_number_integer()) return std::nullopt;
  int64_t amount = value.get<int64_t>();
  if (amount < 1) return std::nullopt;
  return amount;
}

namespace {

int Decimals(std::string_view currency) {
  static constexpr std::string_view kZeroDecimal[] = {"jpy", "krw", "vnd", "clp", "isk"};
  return std::find(std::begin(kZeroDecimal), std::end(kZeroDecimal), currency) != std::end(kZeroDecimal) ? 0 : 2;
}

}  // namespace

GatewayResponse MethodNotAllowed(std::string_view allowed) {
  GatewayResponse response =
      JsonResponse(405, nlohmann::json{{"message", "method not allowed; use " + std::string(allowed)}}.dump());
  response.headers.emplace_back("Allow", allowed);
  return response;
}

std::string FormatMajor(int64_t amount_minor, std::string_view currency) {
  if (Decimals(currency) == 0) return std::to_string(amount_minor);
  return fmt::format("{}.{:02}", amount_minor / 100, amount_minor % 100);
}

std::optional<int64_t> MajorAmount(const nlohmann::json& value, std::string_view currency) {
  const int decimals = Decimals(currency);
  const int64_t scale = decimals == 0 ? 1 : 100;
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_number()) {
    double major = value.get<double>();
    double minor = std::round(major * static_cast<double>(scale));
    if (std::fabs(minor - major * static_cast<double>(scale)) > 1e-6 || minor < 1) return std::nullopt;
    return static_cast<int64_t>(minor);
  } else {
    return std::nullopt;
  }
  size_t dot = text.find('.');
  std::string whole = text.substr(0, dot);
  std::string fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || whole.size() > 10 || !digits(whole) || !digits(fraction) ||
      fraction.size() > static_cast<size_t>(decimals) || (dot != std::string::npos && fraction.empty())) {
    return std::nullopt;
  }
  fraction.resize(static_cast<size_t>(decimals), '0');
  int64_t amount = std::stoll(whole) * scale + (fraction.empty() ? 0 : std::stoll(fraction));
  if (amount < 1) return std::nullopt;
  return amount;
}

std::optional<std::string> Currency(std::string_view text) {
  if (text.size() != 3) return std::nullopt;
  std::string lower;
  for (char c : text) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return std::nullopt;
    lower.push_back(static_cast<char>(c | 0x20));
  }
  return lower;
}

std::string UpperCurrency(std::string text) {
  for (char& c : text) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return text;
}

bool IsDeclinedId(std::string_view id) {
  size_t underscore = id.rfind('_');
  if (underscore != std::string_view::npos) id.remove_prefix(underscore + 1);
  return id == "13";
}

std::optional<std::string> QueryParam(std::string_view query, std::string_view name) {
  std::optional<FormFields> fields = ParseForm(query);
  if (!fields) return std::nullopt;
  for (auto& [field, value] : *fields) {
    if (field == name) return value;
  }
  return std::nullopt;
}

std::string CanonicalJson(nlohmann::json request) { return request.dump(); }

}  // namespace fake_gateway
