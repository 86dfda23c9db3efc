// Deterministic fitting of phasekey's provider keys into a gateway's limits.
//
// A provider key is "<stable uuid>:<phase>" (PhaseContext::ProviderKey). Most
// gateways take it as it is; some limit the length or the alphabet (Square 45
// characters, Amazon Pay 32 of [A-Za-z0-9_-], Amazon Payment Services 40 of
// [A-Za-z0-9._-]) or want a UUID (Moyasar). Fitting must be a function: the
// same key row and phase give the same gateway key on every retry, in every
// process, after every upgrade that keeps this file's behaviour. Changing the
// output for an existing input is a breaking change: keys in flight would no
// longer match.
#ifndef PHASEKEY_PHASES_KEY_FITTING_H_
#define PHASEKEY_PHASES_KEY_FITTING_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace phasekey::phases {

// The characters a gateway accepts in a key or reference.
enum class KeyAlphabet {
  kPrintableAscii,  // '!' .. '~' (no space, no control, no non-ASCII)
  kUrlSafe,         // [A-Za-z0-9_-]
  kReferenceSafe,   // [A-Za-z0-9._-]
  kUuid,            // a lowercase RFC 9562 UUID, 36 characters
};

// A gateway's limits on a key or a merchant reference.
struct KeyRules {
  std::size_t min_length = 1;                           // the fewest characters accepted
  std::size_t max_length = 255;                         // the most characters accepted (a kUuid key has 36)
  KeyAlphabet alphabet = KeyAlphabet::kPrintableAscii;  // the characters accepted
};

// "1..255 printable ASCII", "UUID", ...: for the CLI and docs.
std::string DescribeKeyRules(const KeyRules& rules);
// "printable-ascii", "url-safe", "reference-safe", "uuid".
std::string_view KeyAlphabetName(KeyAlphabet alphabet);

// True when `key` satisfies `rules` as it is.
bool KeyFits(std::string_view key, const KeyRules& rules);

// Fits `key` into `rules`:
//   - kUuid: a name-based UUID of the key (RFC 9562 version 5, SHA-1 in
//     phasekey's own namespace), lowercase;
//   - a key that already fits is returned unchanged;
//   - otherwise a readable prefix of the key (characters outside the
//     alphabet become '-') + '-' + the first 26 base32 characters (130 bits)
//     of SHA-256(key), cut to max_length. Two distinct keys collide only if
//     their SHA-256 digests share 130 bits, or if one key that already fits
//     equals another's fitted form (which has the hash suffix, so only a key
//     crafted to imitate one could).
// Requires max_length >= 27 (every gateway here allows at least 32).
std::string FitToRules(std::string_view key, const KeyRules& rules);

}  // namespace phasekey::phases

#endif  // PHASEKEY_PHASES_KEY_FITTING_H_
