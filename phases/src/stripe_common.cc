#include "stripe_common.h"

#include <string>

#include "answer_util.h"
#include "phasekey/phases/money.h"

namespace phasekey::phases::internal {

Result<std::int64_t> StripeAmount(std::int64_t amount_minor, std::string_view currency) {
  const std::string code = UpperCurrency(currency);
  if (code == "MGA") return RescaleMinor(amount_minor, code, 0);
  if (code == "ISK") return RescaleMinor(amount_minor, code, 2);
  Result<std::int64_t> same = RescaleMinor(amount_minor, code, CurrencyExponent(code));
  if (same && CurrencyExponent(code) == 3 && *same % 10 != 0) {
    return Status::InvalidArgument("Stripe requires three-decimal amounts (" + code + ") to end in 0");
  }
  return same;
}

Classification StripeError(const ProviderAnswer& answer, const nlohmann::json& json) {
  if (auto failed = TransportFailure(answer)) return *failed;
  const nlohmann::json& error = At(json, {"error"});
  const std::string type = Str(error, "type");
  std::string code = Str(error, "code");
  const std::string message = Str(error, "message");
  const std::string* should_retry = answer.FindHeader("Stripe-Should-Retry");
  if (should_retry != nullptr && *should_retry == "true") return RetryLater(code, message);
  if (answer.status == 402 || type == "card_error") {
    const std::string decline = Str(error, "decline_code");
    return Declined(decline.empty() ? code : decline, message);
  }
  // 409 first: idempotency_key_in_use may come typed idempotency_error.
  if (answer.status == 409) return RetryLater(code.empty() ? "conflict" : code, message);
  if (type == "idempotency_error") return Unknown(code.empty() ? type : code, message);
  if (answer.status >= 500 && should_retry != nullptr && *should_retry == "false") {
    return Unknown(code.empty() ? "api_error" : code, "saved under the key and replayed on retry: " + message);
  }
  return HttpFallback(answer, /*keyed=*/true, code.empty() ? type : code, message);
}

}  // namespace phasekey::phases::internal
