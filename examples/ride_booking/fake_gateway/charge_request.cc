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
constexpr std::string_view kAuthenticatingCustomerId = "14";
constexpr std::string_view kChargeFields[] = {"amount", "currency", "customer", "description"};
constexpr std::string_view kIntentFields[] = {"amount",
                                              "currency",
                                              "customer",
                                              "description",
                                              "confirm",
                                              "payment_method",
                                              "automatic_payment_methods[enabled]",
                                              "automatic_payment_methods[allow_redirects]"};

using Fields = std::map<std::string, std::string, std::less<>>;

ParamError Missing(std::string_view param) {
  return {"parameter_missing", std::string(param), fmt::format("Missing required param: {}.", param)};
}

ParamError Invalid(std::string_view code, std::string_view param, std::string message) {
  return {std::string(code), std::string(param), std::move(message)};
}

// Collects the fields by name; rejects names not in `known` (metadata[K]
// aside) and repeated names.
template <std::size_t N>
std::variant<Fields, ParamError> CollectFields(std::string_view body, const std::string_view (&kKnown)[N]) {
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
      return Invalid("parameter_unknown", name, fmt::format("Received unknown parameter: {}", name));
    }
    if (!fields.emplace(name, std::move(value)).second) {
      return Invalid("parameter_invalid_string", name, fmt::format("Received the parameter {} more than once.", name));
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
  bool ok = text.size() == 3 && std::all_of(text.begin(), text.end(), [](char c) { return c >= 'a' && c <= 'z'; });
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

bool IsIdentifier(std::string_view id) {
  return !id.empty() && id.size() <= kMaxCustomerIdLength && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  });
}

std::optional<ParamError> CheckCustomer(const std::string& text) {
  if (IsIdentifier(CustomerId(text))) return std::nullopt;
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

// The fields only PaymentIntents take (charge_request.h), into
// params->intent_fields.
std::optional<ParamError> CollectIntentFields(const Fields& fields, ChargeParams* params) {
  const auto confirm = fields.find("confirm");
  if (confirm == fields.end() || confirm->second != "true") {
    return Invalid("parameter_invalid_boolean", "confirm",
                   "fake_gateway creates payment intents confirmed at once: send confirm=true.");
  }
  if (auto pm = fields.find("payment_method"); pm != fields.end() && !IsIdentifier(pm->second)) {
    return Invalid("resource_missing", "payment_method", fmt::format("No such PaymentMethod: '{}'", pm->second));
  }
  const auto enabled = fields.find("automatic_payment_methods[enabled]");
  if (enabled != fields.end() && enabled->second != "true" && enabled->second != "false") {
    return Invalid("parameter_invalid_boolean", enabled->first, "Invalid boolean: " + enabled->second);
  }
  const auto redirects = fields.find("automatic_payment_methods[allow_redirects]");
  if (redirects != fields.end() && redirects->second != "always" && redirects->second != "never") {
    return Invalid("parameter_invalid_string", redirects->first, "allow_redirects is always or never.");
  }
  for (const auto& [name, value] : fields) {
    if (name == "payment_method" || name.starts_with("automatic_payment_methods[")) {
      params->intent_fields[name] = value;
    }
  }
  return std::nullopt;
}

std::variant<ChargeParams, ParamError> ParseParams(std::variant<Fields, ParamError> collected, bool intent) {
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
  if (intent) {
    if (auto error = CollectIntentFields(fields, &params)) return *error;
  }
  return params;
}

}  // namespace

std::variant<ChargeParams, ParamError> ParseChargeParams(std::string_view form_body) {
  return ParseParams(CollectFields(form_body, kChargeFields), /*intent=*/false);
}

std::variant<ChargeParams, ParamError> ParseIntentParams(std::string_view form_body) {
  return ParseParams(CollectFields(form_body, kIntentFields), /*intent=*/true);
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
  if (!params.intent_fields.empty()) json["intent_fields"] = params.intent_fields;
  return json.dump();  // nlohmann::json sorts object members: a stable text
}

bool IsDeclinedCustomer(std::string_view customer) { return CustomerId(customer) == kDeclinedCustomerId; }

bool NeedsAuthentication(std::string_view customer) { return CustomerId(customer) == kAuthenticatingCustomerId; }

}  // namespace fake_gateway
