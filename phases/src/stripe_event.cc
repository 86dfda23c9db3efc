#include "phasekey/phases/stripe_event.h"

#include <nlohmann/json.hpp>

#include <string>

namespace phasekey::phases {
namespace {

// The non-empty string at `pointer`, or "".
std::string StringAt(const nlohmann::json& doc, const char* pointer) {
  try {
    const nlohmann::json& v = doc.at(nlohmann::json::json_pointer(pointer));
    return v.is_string() ? v.get<std::string>() : "";
  } catch (const nlohmann::json::exception&) {  // absent, or a parent of another type
    return "";
  }
}

}  // namespace

Result<InboxEvent> ParseStripeEvent(std::string_view body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Status::InvalidArgument("the body is not a JSON object");
  InboxEvent e;
  e.provider = std::string(kStripeProvider);
  e.event_id = StringAt(doc, "/id");
  e.type = StringAt(doc, "/type");
  // A charge or refund of a PaymentIntent is filed under the intent.
  e.object_id = StringAt(doc, "/data/object/payment_intent");
  if (e.object_id.empty()) e.object_id = StringAt(doc, "/data/object/id");
  if (e.event_id.empty() || e.type.empty() || e.object_id.empty()) {
    return Status::InvalidArgument("an event needs string members id, type and data.object.id");
  }
  e.payload = std::string(body);
  return e;
}

}  // namespace phasekey::phases
