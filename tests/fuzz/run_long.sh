#!/usr/bin/env bash
# The long fuzz run: builds the fuzzers (clang, build-fuzz/) and runs each
# target for a long time, keeping what it learns.
#   tests/fuzz/run_long.sh [SECONDS_PER_TARGET]     default 1800 (30 min)
# The growing corpus lives in .phasekey/fuzz/<target>/ (not in git), so each
# run continues where the last one stopped; crashing inputs are saved in
# .phasekey/fuzz/artifacts/. To keep an interesting input as a seed, copy it
# into tests/fuzz/corpus/<target>/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECONDS_EACH="${1:-1800}"
BUILD_DIR="${PHASEKEY_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
command -v clang++ >/dev/null || { echo "run_long.sh: clang++ is missing (Debian: clang libclang-rt-14-dev)" >&2; exit 1; }
CXX=clang++ cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHASEKEY_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "${PHASEKEY_JOBS:-2}"
mkdir -p "$ROOT/.phasekey/fuzz"
exec "$ROOT/tests/fuzz/run.sh" "$BUILD_DIR" "$SECONDS_EACH" "$ROOT/.phasekey/fuzz"
