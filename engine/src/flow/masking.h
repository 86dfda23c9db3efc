// Masking the fields a flow declares with Flow::Builder::Masked in a body
// about to be shown or logged (the console, `phasekey keys show`, log lines).
//
// The pointers come from a built flow (checked by Build()) or from the
// table phasekey.flow_masks (flow_masks.h); a pointer that is not valid
// RFC 6901 masks nothing and is otherwise ignored. Pure functions, safe on
// any thread.
#ifndef PHASEKEY_SRC_FLOW_MASKING_H_
#define PHASEKEY_SRC_FLOW_MASKING_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace phasekey::flow {

// What a masked value is shown as, whatever its type was.
inline constexpr std::string_view kMaskedValue = "***";

// `value` with the value at each of `pointers` that it has replaced by the
// string kMaskedValue (numbers, objects, arrays and null too). A pointer
// `value` does not have (a missing member, an index past an array's end,
// "-", a member of a scalar) masks nothing.
nlohmann::json MaskJsonValue(nlohmann::json value, const std::vector<std::string>& pointers);

// `json_text` (a stored request or response body) fit to show: the JSON
// text as is when no pointer is found in it, else the masked value dumped
// compactly; "" for an empty body. A body that is not JSON (or not UTF-8)
// is never echoed, pointers or not, since its bytes could be card data: it
// becomes "[not JSON: N bytes]".
std::string MaskJson(std::string_view json_text, const std::vector<std::string>& pointers);

}  // namespace phasekey::flow

#endif  // PHASEKEY_SRC_FLOW_MASKING_H_
