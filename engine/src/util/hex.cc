#include "util/hex.h"

#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <random>
#include <stdexcept>

namespace phasekey::util {
namespace {

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string HexDecode(std::string_view hex) {
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int hi = Nibble(hex[i]), lo = Nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) break;
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

namespace {

// Most of what RAND_bytes costs under OpenSSL 3 is paid per call (it looks
// up the thread's generator each time), and a UUID is drawn for every
// request: each thread draws 4 KiB at once and hands out 16 bytes at a time.
// A forked child must never hand out its parent's bytes (two owner tokens
// would be equal), so the buffer belongs to the process that filled it.
class RandomPool {
 public:
  void Take(unsigned char* out, std::size_t n) {
    if (pid_ != ::getpid() || used_ + n > buffer_.size()) Refill();
    std::copy_n(buffer_.data() + used_, n, out);
    std::fill_n(buffer_.data() + used_, n, 0);  // handed out once, never kept
    used_ += n;
  }

 private:
  void Refill() {
    if (RAND_bytes(buffer_.data(), static_cast<int>(buffer_.size())) != 1)
      throw std::runtime_error("RAND_bytes failed");
    pid_ = ::getpid();
    used_ = 0;
  }

  std::array<unsigned char, 4096> buffer_{};
  std::size_t used_ = sizeof(buffer_);
  pid_t pid_ = 0;
};

}  // namespace

std::string RandomUuid() {
  thread_local RandomPool pool;
  std::array<unsigned char, 16> b{};
  pool.Take(b.data(), b.size());
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  const std::string h = HexEncode(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" + h.substr(20);
}

}  // namespace phasekey::util
