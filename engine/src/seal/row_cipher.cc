#include "seal/row_cipher.h"

#include <openssl/evp.h>

#include <fmt/format.h>

#include <stdexcept>

namespace phasekey::seal {

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out(3 * text.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  std::size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

std::string RowCipher::Aad(std::string_view part) const {
  // Lengths first, so no account or key can be made to read as another.
  return fmt::format("phasekey:{}:{}:{}:{}:{}:{}", part, bucket_, account_.size(), account_, idempotency_key_.size(),
                     idempotency_key_);
}

std::string RowCipher::SealPart(std::string_view part, std::string_view plaintext) const {
  if (key_ == nullptr) return std::string(plaintext);
  return Seal(*key_, Aad(part), plaintext);
}

std::string RowCipher::OpenPart(std::string_view part, std::string_view stored) const {
  if (key_ == nullptr) return std::string(stored);
  auto opened = Open(*key_, Aad(part), stored);
  if (!opened) {
    throw std::runtime_error(
        fmt::format("the stored {} of a key of account '{}' does not open under its data key "
                    "(damaged or moved from another row)",
                    part, account_));
  }
  return std::move(*opened);
}

nlohmann::json RowCipher::SealOutcomes(const nlohmann::json& outcomes) const {
  if (key_ == nullptr || outcomes.empty()) return outcomes;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [point, value] : outcomes.items()) {
    out[point] = Base64Encode(SealPart("outcome:" + point, value.dump()));
  }
  return out;
}

nlohmann::json RowCipher::OpenOutcomes(const nlohmann::json& stored) const {
  if (key_ == nullptr || stored.empty()) return stored;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [point, value] : stored.items()) {
    std::optional<std::string> sealed = value.is_string() ? Base64Decode(value.get<std::string>()) : std::nullopt;
    if (!sealed) throw std::runtime_error("a sealed outcome of point '" + point + "' is not base64");
    out[point] = nlohmann::json::parse(OpenPart("outcome:" + point, *sealed));
  }
  return out;
}

}  // namespace phasekey::seal
