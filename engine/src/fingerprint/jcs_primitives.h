// The leaf operations of RFC 8785 (JCS): number and string serialization and
// the property-name order. Private to the engine; the public entry points
// are in phasekey/fingerprint.h.
#ifndef PHASEKEY_SRC_FINGERPRINT_JCS_PRIMITIVES_H_
#define PHASEKEY_SRC_FINGERPRINT_JCS_PRIMITIVES_H_

#include <cstddef>
#include <cstdint>
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

// Appends FormatNumber(value) to `*out` without a temporary string.
// Precondition: `value` is finite.
void AppendNumber(double value, std::string* out);

// Appends to `*out` the canonical form of `number`, a JSON number (RFC 8259
// section 6; the caller has checked the grammar): FormatNumber of the double
// nearest to it, where a magnitude below the smallest subnormal is 0.
// Returns false, appending nothing, if the magnitude overflows a double.
// Numbers of up to 15 significant digits in the normal range are laid out
// from their own digits, which then are the shortest round-trip digits (any
// decimal of up to 15 significant digits survives the trip through a
// double); the rest go through the double.
bool AppendJsonNumber(std::string_view number, std::string* out);

// Appends `utf8` to `*out` as a JSON string literal per RFC 8785 section
// 3.2.2.2: quoted, with \" \\ \b \t \n \f \r for those characters,
// \u00xx (lowercase hex) for the other characters below U+0020, and every
// other character (including '/', U+007F and all non-ASCII) copied as is.
// Bytes are copied without validation: `utf8` must already be well-formed.
void AppendString(std::string_view utf8, std::string* out);

// Appends code point `cp` (at most U+10FFFF, not a surrogate) to `*out` as
// it appears inside a canonical string literal: escaped as AppendString
// escapes it, otherwise as its UTF-8 bytes.
void AppendEscapedCodePoint(std::uint32_t cp, std::string* out);

// Appends code point `cp` (same precondition) to `*out` as UTF-8.
void AppendUtf8(std::uint32_t cp, std::string* out);

// Returns the length (1 to 4) of the well-formed UTF-8 sequence at the start
// of `bytes` (Unicode table 3-7: no overlong forms, no surrogates, nothing
// above U+10FFFF), or 0 if it is not one (including a truncated sequence or
// empty input).
int Utf8SequenceLength(std::string_view bytes);

// Returns the index of the first byte at or after `p` in `s` that a
// string literal cannot copy without a look: '"', '\\', a control character
// or a non-ASCII byte; s.size() if there is none. Reads 8 bytes at a time.
std::size_t SkipPlainAscii(std::string_view s, std::size_t p);

// Compares two property names, each well-formed UTF-8, in the order RFC 8785
// section 3.2.3 requires: by their UTF-16 code units, unsigned, a shorter
// name first on a common prefix. Returns <0, 0 or >0. No UTF-16 is built:
// UTF-8 byte order is code point order, which differs from UTF-16 order only
// between U+E000..U+FFFF and the supplementary planes (surrogate pairs sort
// first in UTF-16), and the first differing byte tells those apart.
int CompareUtf16(std::string_view a, std::string_view b);

}  // namespace phasekey::jcs

#endif  // PHASEKEY_SRC_FINGERPRINT_JCS_PRIMITIVES_H_
