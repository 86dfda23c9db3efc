#include "fake_gateway/charge_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "fake_gateway/form.h"

namespace fake_gateway {
namespace {

constexpr int64_t kMaxAmount = 99'999'999;
constexpr size_t kMaxCustomerIdLength = 64;
constexpr size_t kMaxDescriptionLength = 1000;
constexpr std::string_view kCustomerPrefix = "cus_";
constexpr std::string_view kDeclinedCustomerId = "13";

using Fields = std::map<std::string, std::string, std::less<>>;

ParamError Missing(std::string_view param) {
  return {"parameter_missing", std::string(param),
          fmt::format("Missing required param: {}.", param)};
}

ParamError Invalid(std::string_view code, std::string_view param, std::string message) {
  return {std::string(code), std::string(param), std::move(message)};
}

// Collects the fields by name; rejects unknown and repeated names.
std::variant<Fields, ParamError> CollectFields(std::string_view body) {
  static constexpr std::string_view kKnown[] = {"amount", "currency", "customer", "description"};
  std::optional<FormFields> form = ParseForm(body);
  if (!form) {
    return Invalid("parameter_invalid_string", "", "The request body is not valid form encoding.");
  }
  Fields fields;
  for (auto& [name, value] : *form) {
    if (name.starts_with("metadata[") && name.ends_with("]")) {
      if (!fields.emplace(name, std::move(value)).second) {
        return Invalid("parameter_invalid_string", name,
                       fmt::format("Received the parameter {} more than once.", name));
      }
      continue;
    }
    if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown)) {
      return Invalid("parameter_unknown", name,
                     fmt::format("Received unknown parameter: {}", name));
    }
    if (!fields.emplace(name, std::move(value)).second) {
      return Invalid("parameter_invalid_string", name,
                     fmt::format("Received the parameter {} more than once.", name));
    }
  }
  return fields;
}

std::optional<ParamError> CheckAmount(const std::string& text, int64_t* amount) {
  bool digits = !text.empty() && text.size() <= 9 &&
                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    return Invalid("parameter_invalid_integer", "amount", fmt::format("Invalid integer: {}", text));
  }
  *amount = std::stoll(text);
  if (*amount < 1 || *amount > kMaxAmount) {
    return Invalid("amount_too_small", "amount",
                   fmt::format("Amount must be between 1 and {} (minor units).", kMaxAmount));
  }
  return std::nullopt;
}

std::optional<ParamError> CheckCurrency(const std::string& text) {
  bool ok = text.size() == 3 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  if (ok) return std::nullopt;
  return Invalid("parameter_invalid_string", "currency",
                 fmt::format("Invalid currency: {}. A currency is three lowercase letters.", text));
}

std::string_view CustomerId(std::string_view customer) {
  if (customer.substr(0, kCustomerPrefix.size()) == kCustomerPrefix) {
    customer.remove_prefix(kCustomerPrefix.size());
  }
  return customer;
}

std::optional<ParamError> CheckCustomer(const std::string& text) {
  std::string_view id = CustomerId(text);
  bool ok = !id.empty() && id.size() <= kMaxCustomerIdLength &&
            std::all_of(id.begin(), id.end(), [](char c) {
              return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     c == '_';
            });
  if (ok) return std::nullopt;
  return Invalid("resource_missing", "customer", fmt::format("No such customer: '{}'", text));
}

constexpr size_t kMaxMetadataKeyLength = 40;
constexpr size_t kMaxMetadataValueLength = 500;

std::optional<ParamError> CollectMetadata(const Fields& fields, std::map<std::string, std::string>* metadata) {
  constexpr std::string_view kPrefix = "metadata[";
  for (const auto& [name, value] : fields) {
    if (!name.starts_with(kPrefix)) continue;
    std::string key = name.substr(kPrefix.size(), name.size() - kPrefix.size() - 1);
    if (key.empty() || key.size() > kMaxMetadataKeyLength || !IsValidUtf8(key)) {
      return Invalid("parameter_invalid_string", name,
                     fmt::format("A metadata key is 1 to {} characters.", kMaxMetadataKeyLength));
    }
    if (value.size() > kMaxMetadataValueLength || !IsValidUtf8(value)) {
      return Invalid("parameter_invalid_string", name,
                     fmt::format("A metadata value is at most {} bytes of UTF-8.", kMaxMetadataValueLength));
    }
    (*metadata)[key] = value;
  }
  return std::nullopt;
}

}  // namespace

std::variant<ChargeParams, ParamError> ParseChargeParams(std::string_view form_body) {
  auto collected = CollectFields(form_body);
  if (auto* error = std::get_if<ParamError>(&collected)) return *error;
  Fields& fields = std::get<Fields>(collected);
  for (std::string_view required : {"amount", "currency", "customer"}) {
    if (!fields.contains(required)) return Missing(required);
  }
  ChargeParams params;
  if (auto error = CheckAmount(fields["amount"], &params.amount)) return *error;
  if (auto error = CheckCurrency(fields["currency"])) return *error;
  if (auto error = CheckCustomer(fields["customer"])) return *error;
  params.currency = fields["currency"];
  params.customer = fields["customer"];
  if (auto it = fields.find("description"); it != fields.end()) {
    if (!IsValidUtf8(it->second)) {
      return Invalid("parameter_invalid_string", "description", "Description is not valid UTF-8.");
    }
    if (it->second.size() > kMaxDescriptionLength) {
      return Invalid("parameter_invalid_string", "description",
                     fmt::format("Description is longer than {} bytes.", kMaxDescriptionLength));
    }
    params.description = it->second;
  }
  if (auto error = CollectMetadata(fields, &params.metadata)) return *error;
  return params;
}

std::string CanonicalParams(const ChargeParams& params) {
  nlohmann::json json = {{"amount", params.amount},
                         {"currency", params.currency},
                         {"customer", params.customer},
                         {"description", nullptr}};
  if (params.description) json["description"] = *params.description;
  // Left out when empty, so texts stored before metadata was accepted still
  // compare equal.
  if (!params.metadata.empty()) json["metadata"] = params.metadata;
  return json.dump();  // nlohmann::json sorts object members: a stable text
}

bool IsDeclinedCustomer(std::string_view customer) {
  return CustomerId(customer) == kDeclinedCustomerId;
}

}  // namespace fake_gateway
