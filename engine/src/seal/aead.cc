#include "seal/aead.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>

namespace phasekey::seal {
namespace {

constexpr unsigned char kVersion = 1;
constexpr std::size_t kNonce = 12;
constexpr std::size_t kTag = 16;

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

Ctx NewCtx() {
  Ctx ctx(EVP_CIPHER_CTX_new());
  if (!ctx) throw std::runtime_error("EVP_CIPHER_CTX_new failed");
  return ctx;
}

const unsigned char* Bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }
unsigned char* Bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

}  // namespace

std::string RandomBytes(std::size_t n) {
  std::string out(n, '\0');
  if (n > 0 && RAND_bytes(Bytes(out), static_cast<int>(n)) != 1) throw std::runtime_error("RAND_bytes failed");
  return out;
}

Key RandomKey() {
  Key k;
  if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1) throw std::runtime_error("RAND_bytes failed");
  return k;
}

std::string Seal(const Key& key, std::string_view aad, std::string_view plaintext) {
  std::string out(kSealOverhead + plaintext.size(), '\0');
  out[0] = static_cast<char>(kVersion);
  const std::string nonce = RandomBytes(kNonce);
  out.replace(1, kNonce, nonce);
  Ctx ctx = NewCtx();
  int len = 0;
  unsigned char* body = Bytes(out) + 1 + kNonce;
  if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), Bytes(nonce)) != 1 ||
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, Bytes(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_EncryptUpdate(ctx.get(), body, &len, Bytes(plaintext), static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx.get(), body + len, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTag, body + plaintext.size()) != 1) {
    throw std::runtime_error("AES-256-GCM encryption failed");
  }
  return out;
}

std::optional<std::string> Open(const Key& key, std::string_view aad, std::string_view sealed) {
  if (sealed.size() < kSealOverhead || static_cast<unsigned char>(sealed[0]) != kVersion) return std::nullopt;
  const std::size_t n = sealed.size() - kSealOverhead;
  const unsigned char* nonce = Bytes(sealed) + 1;
  const unsigned char* body = nonce + kNonce;
  std::string tag(sealed.substr(1 + kNonce + n));
  std::string out(n, '\0');
  Ctx ctx = NewCtx();
  int len = 0;
  if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, key.data(), nonce) != 1 ||
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, Bytes(aad), static_cast<int>(aad.size())) != 1 ||
      EVP_DecryptUpdate(ctx.get(), Bytes(out), &len, body, static_cast<int>(n)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTag, Bytes(tag)) != 1) {
    return std::nullopt;
  }
  int tail = 0;
  if (EVP_DecryptFinal_ex(ctx.get(), Bytes(out) + len, &tail) != 1) return std::nullopt;
  return out;
}

}  // namespace phasekey::seal
