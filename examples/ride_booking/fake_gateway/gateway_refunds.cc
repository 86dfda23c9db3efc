// POST /v1/refunds of the stripe dialect (gateway.h): a whole-charge refund,
// recorded durably in the ledger and idempotent under Idempotency-Key like a
// charge. Refunds are rare (an operator's action), so they run one at a time
// under refund_mu_, which makes "already refunded?" and the append one step.
#include <fmt/format.h>

#include <algorithm>

#include "fake_gateway/form.h"
#include "fake_gateway/gateway.h"
#include "fake_gateway/stripe_json.h"

namespace fake_gateway {
namespace {

GatewayResponse InvalidRequest(int status, std::string_view code, std::string_view param, std::string_view message) {
  return JsonResponse(status, ErrorJson("invalid_request_error", code, param, message));
}

bool IsValidKey(std::string_view key) {
  auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; };
  return !key.empty() && key.size() <= 255 && IsValidUtf8(key) && std::none_of(key.begin(), key.end(), control);
}

// The charge=... field, the only one accepted; "" when missing or repeated.
std::string ChargeField(const FormFields& fields) {
  std::string charge;
  for (const auto& [name, value] : fields) {
    if (name != "charge" || !charge.empty()) return "";
    charge = value;
  }
  return charge;
}

}  // namespace

GatewayResponse Gateway::Refund(const Headers& headers, std::string_view body) {
  const std::optional<std::string> key = FindHeader(headers, "Idempotency-Key");
  if (key && !IsValidKey(*key)) {
    return InvalidRequest(400, "idempotency_key_invalid", "", "An Idempotency-Key is 1 to 255 bytes of UTF-8 text.");
  }
  const std::optional<FormFields> fields = ParseForm(body);
  const std::string charge_id = fields ? ChargeField(*fields) : "";
  if (charge_id.empty()) {
    return InvalidRequest(400, "parameter_missing", "charge", "A refund needs exactly one parameter, charge.");
  }
  return RefundCharge(charge_id, key, "refund:charge=" + FormEncode(charge_id));
}

GatewayResponse Gateway::RefundCharge(const std::string& charge_id, const std::optional<std::string>& key,
                                      const std::string& canonical) {
  std::lock_guard refund_lock(refund_mu_);
  if (key) {
    if (auto stored = Stored(*key)) return stored->params == canonical ? dialect_->ReplayOf(*key, *stored)
                                                                        : dialect_->Reused(*key, *stored);
  }
  const std::vector<ChargeRecord> charges = ledger_->Charges();
  const auto charge = std::find_if(charges.begin(), charges.end(), [&](const auto& c) { return c.id == charge_id; });
  if (charge == charges.end()) {
    return InvalidRequest(404, "resource_missing", "charge", fmt::format("No such charge: '{}'", charge_id));
  }
  for (const RefundRecord& r : ledger_->Refunds()) {
    if (r.charge_id == charge_id) {
      return InvalidRequest(400, "charge_already_refunded", "charge",
                            fmt::format("Charge {} has already been refunded.", charge_id));
    }
  }
  LedgerEntry entry;
  entry.key = key;
  entry.response.params = canonical;
  entry.response.stored_at_ms = NowMs();
  entry.refund = RefundRecord{NewChargeId("re_"), charge_id, charge->amount, entry.response.stored_at_ms / 1000};
  entry.response.status = 200;
  entry.response.body = RefundJson(*entry.refund);
  std::string error;
  if (!ledger_->Append(entry, &error)) return dialect_->Failed("Ledger write failed: " + error);
  if (options_.on_recorded) options_.on_recorded(entry);
  GatewayResponse response = JsonResponse(200, entry.response.body);
  if (key) response.headers.emplace_back("Idempotency-Key", *key);
  return response;
}

}  // namespace fake_gateway
