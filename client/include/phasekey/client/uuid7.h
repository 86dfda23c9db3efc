// UUID version 7 (RFC 9562 §5.7): the idempotency keys of the client.
//
// Layout, most significant bit first:
//   48 bits  unix_ts_ms   Unix time in milliseconds, big-endian
//    4 bits  ver          0b0111
//   12 bits  rand_a       random (see monotonicity below)
//    2 bits  var          0b10
//   62 bits  rand_b       random
// Random bits come from OpenSSL's CSPRNG (RAND_bytes). Time-ordered keys go
// into the server's unique index in order, which keeps its inserts on the
// right-hand edge of the B-tree.
//
// Monotonic within a process (RFC 9562 §6.2, method 2, "monotonic random"):
// a UUID made in the same millisecond as the previous one, or when the clock
// went backwards, is the previous one with its 74 random bits (rand_a:rand_b
// read as one number) increased by a random amount from 1 to 2^32. So every
// UUID this process returns sorts after the one before, as bytes and as text.
#ifndef PHASEKEY_CLIENT_UUID7_H_
#define PHASEKEY_CLIENT_UUID7_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace phasekey::client {

// A UUID's 16 bytes in network order (the layout above, first byte first).
using Uuid = std::array<std::uint8_t, 16>;

// A new UUIDv7, greater than every UUID this process returned before.
// Thread-safe. Throws std::runtime_error when the CSPRNG fails.
Uuid NewUuidV7();

// The canonical text form: 36 characters, lowercase hex, 8-4-4-4-12.
std::string FormatUuid(const Uuid& uuid);

// NewUuidV7() as text: what the client sends as Idempotency-Key.
std::string NewUuidV7Text();

// The smallest UUIDv7 of t's millisecond: timestamp t (clamped to the 48
// bits), version 7, variant 0b10, every random bit zero. Every UUID that
// NewUuidV7() returns once the system clock has reached t sorts at or after
// it (unless the clock is set back across t), as bytes and as text (in
// PostgreSQL: COLLATE "C"), so FormatUuid(MinUuidV7(start)) selects the
// keys a client made since `start` with no prefix in the keys. Pure.
Uuid MinUuidV7(std::chrono::system_clock::time_point t);

// The 48-bit millisecond timestamp of a UUIDv7.
std::int64_t UuidV7UnixMillis(const Uuid& uuid);

}  // namespace phasekey::client

#endif  // PHASEKEY_CLIENT_UUID7_H_
