#include "phasekey/phases/provider_adapter.h"

#include <string>

#include "answer_util.h"

namespace phasekey::phases {
namespace {

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

const std::string* Find(const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (SameName(n, name)) return &v;
  }
  return nullptr;
}

}  // namespace

const std::string* ProviderRequest::FindHeader(std::string_view name) const { return Find(headers, name); }
const std::string* ProviderAnswer::FindHeader(std::string_view name) const { return Find(headers, name); }

std::string_view KeyPlacementName(KeyPlacement placement) {
  switch (placement) {
    case KeyPlacement::kHeader: return "header";
    case KeyPlacement::kBodyField: return "body";
    case KeyPlacement::kNone: return "none";
  }
  return "?";
}

ProviderAdapter::ProviderAdapter(AdapterInfo info, std::string base_url)
    : info_(std::move(info)), base_url_(std::move(base_url)) {}

std::string ProviderAdapter::FitKey(std::string_view provider_key) const {
  if (info_.placement == KeyPlacement::kNone) return "";
  return FitToRules(provider_key, info_.key_rules);
}

std::string ProviderAdapter::ReferenceFor(std::string_view provider_key) const {
  return FitToRules(provider_key, info_.reference_rules);
}

Result<ProviderRequest> ProviderAdapter::BuildRefund(const RefundIntent&, std::string_view) const {
  return Status::FailedPrecondition(info_.name + " has no refund in this adapter");
}

Classification ProviderAdapter::ClassifyRefund(const ProviderAnswer& answer) const {
  if (auto failed = internal::TransportFailure(answer)) return *failed;
  const nlohmann::json json = internal::ParseJson(answer.body);
  if (internal::Is2xx(answer.status) && !internal::Str(json, "id").empty()) {
    return internal::Succeeded(internal::Str(json, "id"), internal::Str(json, "status"));
  }
  return internal::HttpFallback(answer, info_.placement != KeyPlacement::kNone, "", "");
}

Result<ProviderRequest> ProviderAdapter::BuildLookup(std::string_view) const {
  return Status::FailedPrecondition(info_.name + " has no status query by merchant reference");
}

Lookup ProviderAdapter::ParseLookup(const ProviderAnswer&) const {
  Lookup l;
  l.message = info_.name + " has no status query by merchant reference";
  return l;
}

Result<ProviderRequest> ProviderAdapter::BuildList(std::chrono::system_clock::time_point, std::string_view) const {
  return Status::FailedPrecondition(info_.name + " cannot list operations by time");
}

Result<OperationPage> ProviderAdapter::ParseList(const ProviderAnswer&) const {
  return Status::FailedPrecondition(info_.name + " cannot list operations by time");
}

}  // namespace phasekey::phases
