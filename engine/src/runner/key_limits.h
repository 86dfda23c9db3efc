// The key row's text limits (checked by the engine, not by CHECK
// constraints: sql/migrations/0001_baseline.sql says why).
#ifndef PHASEKEY_SRC_RUNNER_KEY_LIMITS_H_
#define PHASEKEY_SRC_RUNNER_KEY_LIMITS_H_

#include <cstddef>

#include "util/utf8.h"

namespace phasekey::runner {

// The longest idempotency key the row holds, in characters.
inline constexpr std::size_t kMaxKeyCharacters = 255;

// How the limits are counted (util/utf8.h).
using util::Utf8Characters;
using util::ValidUtf8;

}  // namespace phasekey::runner

#endif  // PHASEKEY_SRC_RUNNER_KEY_LIMITS_H_
