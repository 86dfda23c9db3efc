#!/usr/bin/env bash
# Installs the phasekey build tree into a temporary prefix, builds the
# consumer project against the installed package, and runs it.
# Usage: run_test.sh <phasekey build dir> <scratch dir>
set -euo pipefail
build="$1"; scratch="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$scratch"; mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log"
test -f "$scratch/prefix/lib/cmake/phasekey/phasekeyConfig.cmake"
test -x "$scratch/prefix/bin/phasekey"
PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig" pkg-config --cflags --libs phasekey phasekey-phases >/dev/null
cmake -S "$here" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release >"$scratch/configure.log"
cmake --build "$scratch/build" -j2 >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log" >&2; exit 1; }
"$scratch/build/consumer" "$scratch/pg"
