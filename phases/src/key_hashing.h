// The hashes behind key fitting (phasekey/phases/key_fitting.h), shared by
// the adapters that sign or derive ids with them. Private to
// phasekey_phases; defined in key_fitting.cc.
//
// Every output here ends up in a gateway key or a signature: changing the
// output for an existing input is a breaking change, as for FitToRules.
#ifndef PHASEKEY_PHASES_SRC_KEY_HASHING_H_
#define PHASEKEY_PHASES_SRC_KEY_HASHING_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace phasekey::phases {

// A name-based UUID (RFC 9562 version 5: SHA-1 of phasekey's namespace UUID
// followed by `name`), lowercase. Version 5 rather than the SHA-256 based
// version 8 because validators that accept only versions 1 to 5 are common
// and no gateway documents which versions it accepts; SHA-1's weakness
// against chosen collisions does not matter for ids we derive ourselves.
std::string NameBasedUuid(std::string_view name);

// phasekey's UUID namespace for NameBasedUuid.
inline constexpr std::string_view kPhasekeyUuidNamespace = "3f0c5b8e-9a47-4d2e-b1c6-7e52a4d90f13";

// SHA-256 of `data` as 64 lowercase hex digits (OpenSSL EVP).
std::string Sha256Hex(std::string_view data);
// The first `chars` characters of the lowercase RFC 4648 base32 encoding of
// SHA-256(data) (at most 52).
std::string Sha256Base32(std::string_view data, std::size_t chars);

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_SRC_KEY_HASHING_H_
