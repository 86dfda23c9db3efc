#include "phasekey/client/uuid7.h"

#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>

namespace phasekey::client {
namespace {

void RandomBytes(std::uint8_t* out, int n) {
  if (RAND_bytes(out, n) != 1) throw std::runtime_error("RAND_bytes failed");
}

// The 74 random bits of a UUIDv7 as one number: rand_a (12 bits, bytes 6-7
// after the version nibble) then rand_b (62 bits, bytes 8-15 after the
// variant bits).
struct RandomPart {
  std::uint16_t a = 0;  // 12 bits used
  std::uint64_t b = 0;  // 62 bits used
};

RandomPart ReadRandom(const Uuid& u) {
  RandomPart r;
  r.a = static_cast<std::uint16_t>(((u[6] & 0x0F) << 8) | u[7]);
  r.b = u[8] & 0x3F;
  for (int i = 9; i < 16; ++i) r.b = (r.b << 8) | u[i];
  return r;
}

Uuid Assemble(std::int64_t ms, const RandomPart& r) {
  Uuid u{};
  for (int i = 0; i < 6; ++i) u[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(ms) >> (40 - 8 * i));
  u[6] = static_cast<std::uint8_t>(0x70 | ((r.a >> 8) & 0x0F));
  u[7] = static_cast<std::uint8_t>(r.a & 0xFF);
  u[8] = static_cast<std::uint8_t>(0x80 | ((r.b >> 56) & 0x3F));
  for (int i = 9; i < 16; ++i) u[i] = static_cast<std::uint8_t>(r.b >> (8 * (15 - i)));
  return u;
}

constexpr std::uint64_t kRandBMask = (std::uint64_t{1} << 62) - 1;

struct Generator {
  std::mutex mu;
  bool have_last = false;  // GUARDED_BY(mu)
  Uuid last{};             // GUARDED_BY(mu)
};

Generator& TheGenerator() {
  static Generator g;
  return g;
}

}  // namespace

std::int64_t UuidV7UnixMillis(const Uuid& u) {
  std::int64_t ms = 0;
  for (int i = 0; i < 6; ++i) ms = (ms << 8) | u[i];
  return ms;
}

Uuid NewUuidV7() {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  Generator& g = TheGenerator();
  std::lock_guard lock(g.mu);
  std::int64_t ms = now;
  RandomPart r;
  if (g.have_last && now <= UuidV7UnixMillis(g.last)) {
    // Same millisecond (or the clock went back): step the previous random
    // bits forward by 1..2^32, carrying into rand_a, then into the time.
    ms = UuidV7UnixMillis(g.last);
    r = ReadRandom(g.last);
    std::uint8_t step_bytes[4];
    RandomBytes(step_bytes, 4);
    std::uint64_t step = 1;
    for (int i = 0; i < 4; ++i) step += static_cast<std::uint64_t>(step_bytes[i]) << (8 * i);
    r.b += step;
    if (r.b > kRandBMask) {
      r.b &= kRandBMask;
      if (++r.a > 0x0FFF) {
        r.a = 0;
        ++ms;  // 2^74 keys in one millisecond: borrow the next one
      }
    }
  } else {
    std::uint8_t bytes[10];
    RandomBytes(bytes, 10);
    r.a = static_cast<std::uint16_t>(((bytes[0] & 0x0F) << 8) | bytes[1]);
    r.b = bytes[2] & 0x3F;
    for (int i = 3; i < 10; ++i) r.b = (r.b << 8) | bytes[i];
  }
  g.last = Assemble(ms, r);
  g.have_last = true;
  return g.last;
}

std::string FormatUuid(const Uuid& u) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[u[i] >> 4]);
    s.push_back(kHex[u[i] & 0x0F]);
  }
  return s;
}

std::string NewUuidV7Text() { return FormatUuid(NewUuidV7()); }

Uuid MinUuidV7(std::chrono::system_clock::time_point t) {
  const std::int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  return Assemble(std::clamp<std::int64_t>(ms, 0, (std::int64_t{1} << 48) - 1), RandomPart{});
}

}  // namespace phasekey::client
