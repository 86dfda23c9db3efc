#include "fake_gateway/stripe_json.h"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace fake_gateway {
namespace {

// Insertion order is kept, so bodies read like Stripe's ("id" first).
using Json = nlohmann::ordered_json;

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json OptionalText(const std::optional<std::string>& text) {
  return text ? Json(*text) : Json(nullptr);
}

Json ChargeObject(const ChargeRecord& charge) {
  return {{"id", charge.id},
          {"object", "charge"},
          {"amount", charge.amount},
          {"currency", charge.currency},
          {"customer", charge.customer},
          {"description", OptionalText(charge.description)},
          {"metadata", Json(charge.metadata)},
          {"status", "succeeded"},
          {"created", charge.created_at}};
}

}  // namespace

std::string ErrorJson(std::string_view type, std::string_view code, std::string_view param,
                      std::string_view message) {
  Json error = {{"type", type}};
  if (!code.empty()) error["code"] = code;
  if (!param.empty()) error["param"] = param;
  error["message"] = message;
  return Dump({{"error", error}});
}

std::string ChargeJson(const ChargeRecord& charge) { return Dump(ChargeObject(charge)); }

std::string ChargeSearchJson(const std::vector<ChargeRecord>& charges, bool has_more) {
  Json data = Json::array();
  for (const ChargeRecord& charge : charges) data.push_back(ChargeObject(charge));
  return Dump({{"object", "search_result"},
               {"url", "/v1/charges/search"},
               {"has_more", has_more},
               {"data", std::move(data)},
               {"next_page", nullptr}});
}

std::string RefundJson(const RefundRecord& refund) {
  return Dump({{"id", refund.id},
               {"object", "refund"},
               {"amount", refund.amount},
               {"charge", refund.charge_id},
               {"status", "succeeded"},
               {"created", refund.created_at}});
}

std::string LedgerJson(const std::vector<ChargeRecord>& charges, const std::vector<RefundRecord>& refunds) {
  std::set<std::string> refunded;
  for (const RefundRecord& refund : refunds) refunded.insert(refund.charge_id);
  Json list = Json::array();
  for (const ChargeRecord& charge : charges) {
    Json item = {{"id", charge.id},
                 {"idempotency_key", OptionalText(charge.idempotency_key)},
                 {"amount", charge.amount},
                 {"currency", charge.currency},
                 {"customer", charge.customer},
                 {"created_at", charge.created_at}};
    if (refunded.contains(charge.id)) item["refunded"] = true;
    list.push_back(std::move(item));
  }
  return Dump(list);
}

}  // namespace fake_gateway
