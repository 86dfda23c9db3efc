// The leaf operations of RFC 8785 (JCS): number and string serialization and
// the property-name sort key. Private to the engine; the public entry points
// are in phasekey/fingerprint.h.
#ifndef PHASEKEY_FINGERPRINT_JCS_PRIMITIVES_H_
#define PHASEKEY_FINGERPRINT_JCS_PRIMITIVES_H_

#include <string>
#include <string_view>

#include "phasekey/status.h"

namespace phasekey::jcs {

// Returns `value` serialized per RFC 8785 section 3.2.2.3, which is
// ECMAScript Number.prototype.toString: the shortest digits that round-trip,
// ties to even, laid out as "120", "1.5", "0.000001", "1e+21" or "5e-324".
// -0 becomes "0". Returns InvalidArgument for NaN and the infinities, which
// have no JSON form.
Result<std::string> FormatNumber(double value);

// Appends `utf8` to `*out` as a JSON string literal per RFC 8785 section
// 3.2.2.2: quoted, with \" \\ \b \t \n \f \r for those characters,
// \u00xx (lowercase hex) for the other characters below U+0020, and every
// other character (including '/', U+007F and all non-ASCII) copied as is.
// Bytes are copied without validation: `utf8` must already be well-formed.
void AppendString(std::string_view utf8, std::string* out);

// Returns `utf8` as UTF-16 code units. Comparing two results with
// std::u16string's operator< orders property names as RFC 8785 section 3.2.3
// requires (unsigned code units, shorter string first on a common prefix).
// Precondition: `utf8` is well-formed UTF-8 (as the JSON parser guarantees).
std::u16string Utf16SortKey(std::string_view utf8);

}  // namespace phasekey::jcs

#endif  // PHASEKEY_FINGERPRINT_JCS_PRIMITIVES_H_
