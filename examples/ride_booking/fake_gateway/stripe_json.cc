#include "fake_gateway/stripe_json.h"

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace fake_gateway {
namespace {

// Insertion order is kept, so bodies read like Stripe's ("id" first).
using Json = nlohmann::ordered_json;

std::string Dump(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json OptionalText(const std::optional<std::string>& text) { return text ? Json(*text) : Json(nullptr); }

// A charge or payment intent object (`object`) for `payment`.
Json PaymentObject(const ChargeRecord& payment, std::string_view object, std::string_view status) {
  return {{"id", payment.id},
          {"object", object},
          {"amount", payment.amount},
          {"currency", payment.currency},
          {"customer", payment.customer},
          {"description", OptionalText(payment.description)},
          {"metadata", Json(payment.metadata)},
          {"status", status},
          {"created", payment.created_at}};
}

Json ChargeObject(const ChargeRecord& charge) { return PaymentObject(charge, "charge", "succeeded"); }

Json IntentObject(const ChargeRecord& payment, std::string_view status) {
  return PaymentObject(payment, "payment_intent", status);
}

Json Unpaid(const std::string& id, const ChargeRecord& request, std::string_view status, std::string_view message) {
  ChargeRecord record = request;
  record.id = id;
  Json intent = IntentObject(record, status);
  if (status == "requires_action") {
    intent["next_action"] = {{"type", "use_stripe_sdk"}};
  } else {
    intent["last_payment_error"] = {
        {"type", "card_error"}, {"code", "card_declined"}, {"decline_code", "generic_decline"}, {"message", message}};
  }
  return intent;
}

Json SearchResult(std::string_view url, Json data, bool has_more) {
  return {{"object", "search_result"},
          {"url", url},
          {"has_more", has_more},
          {"data", std::move(data)},
          {"next_page", nullptr}};
}

}  // namespace

std::string IntentJson(const ChargeRecord& payment) { return Dump(IntentObject(payment, "succeeded")); }

std::string UnpaidIntentJson(const std::string& id, const ChargeRecord& request, std::string_view status,
                             std::string_view message) {
  return Dump(Unpaid(id, request, status, message));
}

std::string DeclinedIntentErrorJson(const std::string& id, const ChargeRecord& request, std::string_view message) {
  return Dump({{"error",
                {{"type", "card_error"},
                 {"code", "card_declined"},
                 {"decline_code", "generic_decline"},
                 {"message", message},
                 {"payment_intent", Unpaid(id, request, "requires_payment_method", message)}}}});
}

std::string IntentSearchJson(const std::vector<ChargeRecord>& payments, bool has_more) {
  Json data = Json::array();
  for (const ChargeRecord& payment : payments) data.push_back(IntentObject(payment, "succeeded"));
  return Dump(SearchResult("/v1/payment_intents/search", std::move(data), has_more));
}

std::string ErrorJson(std::string_view type, std::string_view code, std::string_view param, std::string_view message) {
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
  return Dump(SearchResult("/v1/charges/search", std::move(data), has_more));
}

std::string PaymentListJson(const std::vector<ChargeRecord>& payments, bool has_more, bool intents) {
  Json data = Json::array();
  for (const ChargeRecord& p : payments) data.push_back(intents ? IntentObject(p, "succeeded") : ChargeObject(p));
  return Dump({{"object", "list"},
               {"url", intents ? "/v1/payment_intents" : "/v1/charges"},
               {"has_more", has_more},
               {"data", std::move(data)}});
}

std::string RefundJson(const RefundRecord& refund) {
  return Dump({{"id", refund.id},
               {"object", "refund"},
               {"amount", refund.amount},
               {refund.charge_id.starts_with("pi_") ? "payment_intent" : "charge", refund.charge_id},
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
