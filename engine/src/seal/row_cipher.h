// RowCipher: the bodies of one key row, sealed under the row's data key, or
// stored as they are when the row has none (docs/data-protection.md). The
// associated data binds each sealed value to its bucket, account, key and
// part (the request, the response, or one recovery point's outcome), so a
// value copied to another row or part does not open.
#ifndef PHASEKEY_SRC_SEAL_ROW_CIPHER_H_
#define PHASEKEY_SRC_SEAL_ROW_CIPHER_H_

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "seal/aead.h"

namespace phasekey::seal {

class RowCipher {
 public:
  // `key` null: the row stores its bodies as they are. The strings must
  // outlive the cipher.
  RowCipher(const Key* key, int bucket, const std::string& account, const std::string& idempotency_key)
      : key_(key), bucket_(bucket), account_(account), idempotency_key_(idempotency_key) {}

  // The request body as stored, and back.
  std::string SealRequest(std::string_view canonical) const { return SealPart("request", canonical); }
  std::string OpenRequest(std::string_view stored) const { return OpenPart("request", stored); }
  // The response body as stored, and back.
  std::string SealResponse(std::string_view body) const { return SealPart("response", body); }
  std::string OpenResponse(std::string_view stored) const { return OpenPart("response", stored); }
  // Outcomes by recovery point: sealed, each value becomes a base64 string
  // of its sealed JSON; the points stay clear (the SQL merges by them).
  nlohmann::json SealOutcomes(const nlohmann::json& outcomes) const;
  nlohmann::json OpenOutcomes(const nlohmann::json& stored) const;

 private:
  std::string Aad(std::string_view part) const;
  std::string SealPart(std::string_view part, std::string_view plaintext) const;
  // Throws std::runtime_error when a sealed value does not open: another
  // key, another row's value, or tampered bytes.
  std::string OpenPart(std::string_view part, std::string_view stored) const;

  const Key* key_;
  int bucket_;
  const std::string& account_;
  const std::string& idempotency_key_;
};

// Base64 (RFC 4648, with padding), as OpenSSL encodes it; nullopt for text
// that is not.
std::string Base64Encode(std::string_view bytes);
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace phasekey::seal

#endif  // PHASEKEY_SRC_SEAL_ROW_CIPHER_H_
