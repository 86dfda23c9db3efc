// Implements flow/masking.h with nlohmann::json's own RFC 6901 pointers.
#include "flow/masking.h"

namespace phasekey::flow {
namespace {

// Masks the value at `pointer` in *value if it is there; false otherwise
// (and for a pointer that is not RFC 6901).
bool MaskAt(nlohmann::json* value, const std::string& pointer) {
  try {
    const nlohmann::json::json_pointer p(pointer);
    if (!value->contains(p)) return false;
    (*value)[p] = std::string(kMaskedValue);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

nlohmann::json MaskJsonValue(nlohmann::json value, const std::vector<std::string>& pointers) {
  for (const std::string& p : pointers) MaskAt(&value, p);
  return value;
}

std::string MaskJson(std::string_view json_text, const std::vector<std::string>& pointers) {
  if (json_text.empty()) return "";
  nlohmann::json value = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return "[not JSON: " + std::to_string(json_text.size()) + " bytes]";
  bool masked = false;
  for (const std::string& p : pointers) masked = MaskAt(&value, p) || masked;
  return masked ? value.dump() : std::string(json_text);
}

}  // namespace phasekey::flow
