#include "fake_gateway/webhook_events.h"

#include <nlohmann/json.hpp>

namespace fake_gateway {
namespace {

using Json = nlohmann::ordered_json;

std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

WebhookEvent Event(const std::string& type, const std::string& id_part, int64_t created, Json object) {
  const std::string id = "evt_" + type.substr(type.find('.') + 1) + "_" + id_part;
  Json event = {{"id", id}, {"object", "event"}, {"type", type}, {"created", created},
                {"data", {{"object", std::move(object)}}}};
  return {id, type, Dump(event)};
}

WebhookEvent Succeeded(const ChargeRecord& c) {
  return Event("charge.succeeded", c.id, c.created_at,
               {{"id", c.id}, {"object", "charge"}, {"amount", c.amount}, {"currency", c.currency},
                {"customer", c.customer}, {"status", "succeeded"}, {"refunded", false}, {"created", c.created_at}});
}

WebhookEvent Refunded(const RefundRecord& r) {
  return Event("charge.refunded", r.charge_id, r.created_at,
               {{"id", r.charge_id}, {"object", "charge"}, {"amount_refunded", r.amount}, {"refunded", true},
                {"status", "succeeded"}, {"refunds", {{"data", Json::array({{{"id", r.id}, {"amount", r.amount}}})}}}});
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
