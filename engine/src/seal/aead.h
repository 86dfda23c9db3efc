// AES-256-GCM, the one cipher phasekey seals with (OpenSSL's EVP), and the
// random bytes its keys and nonces come from.
//
// A sealed value is: a version byte (1), a 12-byte random nonce, the
// ciphertext (as long as the plaintext) and the 16-byte tag. The associated
// data is authenticated, not stored: it binds a value to where it belongs
// (the account, the key, the column), so a value copied to another row does
// not open there.
#ifndef PHASEKEY_SRC_SEAL_AEAD_H_
#define PHASEKEY_SRC_SEAL_AEAD_H_

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace phasekey::seal {

// A 256-bit key. Copies are wiped by nobody: keep them few and short-lived.
using Key = std::array<unsigned char, 32>;

// Bytes a sealed value adds to its plaintext.
inline constexpr std::size_t kSealOverhead = 1 + 12 + 16;

// `n` bytes from OpenSSL's CSPRNG; throws std::runtime_error when it fails.
std::string RandomBytes(std::size_t n);
// A new random key.
Key RandomKey();

// Seals `plaintext` under `key` with `aad`. Throws std::runtime_error only
// when OpenSSL fails.
std::string Seal(const Key& key, std::string_view aad, std::string_view plaintext);
// The plaintext, or nullopt when `sealed` was not made by Seal() with this
// key and this associated data (a wrong key, another row's value, tampered
// bytes, a truncated value).
std::optional<std::string> Open(const Key& key, std::string_view aad, std::string_view sealed);

}  // namespace phasekey::seal

#endif  // PHASEKEY_SRC_SEAL_AEAD_H_
