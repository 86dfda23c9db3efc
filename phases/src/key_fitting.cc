#include "phasekey/phases/key_fitting.h"

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "key_hashing.h"

namespace phasekey::phases {
namespace {

constexpr std::size_t kHashChars = 26;  // 130 bits of base32
constexpr char kBase32[] = "abcdefghijklmnopqrstuvwxyz234567";
constexpr char kHex[] = "0123456789abcdef";

// Digest of `data` with `md`. Throws std::runtime_error only if OpenSSL fails
// to allocate, which no caller can recover from anyway.
std::string Digest(const EVP_MD* md, std::string_view prefix, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  bool ok = ctx != nullptr && EVP_DigestInit_ex(ctx, md, nullptr) == 1 &&
            EVP_DigestUpdate(ctx, prefix.data(), prefix.size()) == 1 &&
            EVP_DigestUpdate(ctx, data.data(), data.size()) == 1 && EVP_DigestFinal_ex(ctx, out.data(), &len) == 1;
  EVP_MD_CTX_free(ctx);
  if (!ok) throw std::runtime_error("OpenSSL digest failed");
  return std::string(reinterpret_cast<const char*>(out.data()), len);
}

bool Allowed(char c, KeyAlphabet alphabet) {
  const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  switch (alphabet) {
    case KeyAlphabet::kPrintableAscii: return c >= '!' && c <= '~';
    case KeyAlphabet::kUrlSafe: return alnum || c == '_' || c == '-';
    case KeyAlphabet::kReferenceSafe: return alnum || c == '_' || c == '-' || c == '.';
    case KeyAlphabet::kUuid: return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
  }
  return false;
}

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !Allowed(s[i], KeyAlphabet::kUuid) || s[i] == '-') return false;
  }
  return true;
}

// The 16 bytes of a lowercase textual UUID. Requires IsUuid(text).
std::string UuidBytes(std::string_view text) {
  std::string hex;
  for (char c : text) {
    if (c != '-') hex.push_back(c);
  }
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    bytes.push_back(static_cast<char>((nibble(hex[i]) << 4) | nibble(hex[i + 1])));
  }
  return bytes;
}

}  // namespace

std::string_view KeyAlphabetName(KeyAlphabet alphabet) {
  switch (alphabet) {
    case KeyAlphabet::kPrintableAscii: return "printable-ascii";
    case KeyAlphabet::kUrlSafe: return "url-safe";
    case KeyAlphabet::kReferenceSafe: return "reference-safe";
    case KeyAlphabet::kUuid: return "uuid";
  }
  return "?";
}

std::string DescribeKeyRules(const KeyRules& rules) {
  switch (rules.alphabet) {
    case KeyAlphabet::kUuid: return "UUID";
    case KeyAlphabet::kPrintableAscii:
      return std::to_string(rules.min_length) + ".." + std::to_string(rules.max_length) + " printable ASCII";
    case KeyAlphabet::kUrlSafe:
      return std::to_string(rules.min_length) + ".." + std::to_string(rules.max_length) + " of [A-Za-z0-9_-]";
    case KeyAlphabet::kReferenceSafe:
      return std::to_string(rules.min_length) + ".." + std::to_string(rules.max_length) + " of [A-Za-z0-9._-]";
  }
  return "?";
}

bool KeyFits(std::string_view key, const KeyRules& rules) {
  if (rules.alphabet == KeyAlphabet::kUuid) return IsUuid(key);
  if (key.size() < rules.min_length || key.size() > rules.max_length) return false;
  for (char c : key) {
    if (!Allowed(c, rules.alphabet)) return false;
  }
  return true;
}

std::string FitToRules(std::string_view key, const KeyRules& rules) {
  if (rules.alphabet == KeyAlphabet::kUuid) return NameBasedUuid(key);
  if (KeyFits(key, rules)) return std::string(key);
  const std::string hash = Sha256Base32(key, kHashChars);
  if (rules.max_length <= hash.size() + 1) return hash.substr(0, rules.max_length);
  const std::size_t room = rules.max_length - hash.size() - 1;
  std::string fitted;
  for (std::size_t i = 0; i < key.size() && fitted.size() < room; ++i) {
    fitted.push_back(Allowed(key[i], rules.alphabet) ? key[i] : '-');
  }
  return fitted + "-" + hash;
}

std::string NameBasedUuid(std::string_view name) {
  std::string d = Digest(EVP_sha1(), UuidBytes(kPhasekeyUuidNamespace), name);
  d[6] = static_cast<char>((d[6] & 0x0f) | 0x50);  // version 5
  d[8] = static_cast<char>((d[8] & 0x3f) | 0x80);  // RFC 9562 variant
  std::string out;
  for (std::size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    const auto byte = static_cast<std::uint8_t>(d[i]);
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  std::string out;
  for (char c : Digest(EVP_sha256(), "", data)) {
    const auto byte = static_cast<std::uint8_t>(c);
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
  return out;
}

std::string Sha256Base32(std::string_view data, std::size_t chars) {
  const std::string digest = Digest(EVP_sha256(), "", data);
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : digest) {
    buffer = (buffer << 8) | static_cast<std::uint8_t>(c);
    bits += 8;
    while (bits >= 5 && out.size() < chars) {
      out.push_back(kBase32[(buffer >> (bits - 5)) & 31]);
      bits -= 5;
    }
  }
  if (bits > 0 && out.size() < chars) out.push_back(kBase32[(buffer << (5 - bits)) & 31]);
  return out;
}

}  // namespace phasekey::phases
