// Lowercase hex for bytes that travel through SQL as text (bytea columns).
#ifndef PHASEKEY_SRC_UTIL_HEX_H_
#define PHASEKEY_SRC_UTIL_HEX_H_

#include <string>
#include <string_view>

namespace phasekey::util {

std::string HexEncode(std::string_view bytes);
// Decodes lowercase or uppercase hex; stops at the first invalid pair.
std::string HexDecode(std::string_view hex);
// A random version 4 UUID (OpenSSL RAND_bytes), as text.
std::string RandomUuid();

}  // namespace phasekey::util

#endif  // PHASEKEY_SRC_UTIL_HEX_H_
