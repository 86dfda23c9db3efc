#include "fake_gateway/webhook_events.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace fake_gateway {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

constexpr std::string_view kIntentPrefix = "pi_";

bool IsIntent(const std::string& payment_id) { return payment_id.starts_with(kIntentPrefix); }

WebhookEvent Event(const std::string& type, const std::string& id_part, int64_t created, Json object) {
  const std::string id = "evt_" + type.substr(type.find('.') + 1) + "_" + id_part;
  Json event = {
      {"id", id}, {"object", "event"}, {"type", type}, {"created", created}, {"data", {{"object", std::move(object)}}}};
  return {id, type, Dump(event)};
}

WebhookEvent Succeeded(const ChargeRecord& c) {
  if (IsIntent(c.id)) {
    return Event("payment_intent.succeeded", c.id, c.created_at,
                 {{"id", c.id},
                  {"object", "payment_intent"},
                  {"amount", c.amount},
                  {"amount_received", c.amount},
                  {"currency", c.currency},
                  {"customer", c.customer},
                  {"status", "succeeded"},
                  {"created", c.created_at}});
  }
  return Event("charge.succeeded", c.id, c.created_at,
               {{"id", c.id},
                {"object", "charge"},
                {"amount", c.amount},
                {"currency", c.currency},
                {"customer", c.customer},
                {"status", "succeeded"},
                {"refunded", false},
                {"created", c.created_at}});
}

WebhookEvent Refunded(const RefundRecord& r) {
  Json charge = {{"id", r.charge_id}, {"object", "charge"}};
  if (IsIntent(r.charge_id)) {
    charge["id"] = "ch_" + r.charge_id.substr(kIntentPrefix.size());
    charge["payment_intent"] = r.charge_id;
  }
  charge.update({{"amount_refunded", r.amount},
                 {"refunded", true},
                 {"status", "succeeded"},
                 {"refunds", {{"data", Json::array({{{"id", r.id}, {"amount", r.amount}}})}}}});
  return Event("charge.refunded", r.charge_id, r.created_at, std::move(charge));
}

}  // namespace

std::vector<WebhookEvent> EventsOf(const LedgerEntry& entry) {
  std::vector<WebhookEvent> events;
  if (entry.charge) events.push_back(Succeeded(*entry.charge));
  if (entry.refund) events.push_back(Refunded(*entry.refund));
  return events;
}

std::vector<WebhookEvent> EventsOfLedger(const std::vector<ChargeRecord>& charges,
                                         const std::vector<RefundRecord>& refunds) {
  std::vector<WebhookEvent> events;
  for (const ChargeRecord& c : charges) events.push_back(Succeeded(c));
  for (const RefundRecord& r : refunds) events.push_back(Refunded(r));
  return events;
}

}  // namespace fake_gateway
