#!/usr/bin/env bash
# Installs the phasekey build tree into a temporary prefix, builds the
# consumer project against the installed package twice and runs each build:
# once through CMake (find_package(phasekey CONFIG)), once through pkg-config
# (`pkg-config --cflags --libs phasekey-tools phasekey-phases phasekey-client`; the first
# brings in phasekey)
# after moving the installed tree elsewhere, so the .pc files must be
# relocatable and name every library a static link needs.
# Usage: run_test.sh <phasekey build dir> <scratch dir>
set -euo pipefail
build="$1"; scratch="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$scratch"; mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log"
test -f "$scratch/prefix/lib/cmake/phasekey/phasekeyConfig.cmake"
test -x "$scratch/prefix/bin/phasekey"
# The examples component (the ride example and its test gateway, which the
# docs run from the installed bin/) comes with a whole install; a package of
# the `phasekey` component alone leaves them out (docs/getting-started.md).
test -x "$scratch/prefix/bin/ride_booking" && test -x "$scratch/prefix/bin/fake_gateway"
cmake --install "$build" --component phasekey --prefix "$scratch/core-only" >"$scratch/install-core.log"
test -x "$scratch/core-only/bin/phasekey" && test -f "$scratch/core-only/lib/cmake/phasekey/phasekeyConfig.cmake"
if [ -e "$scratch/core-only/bin/ride_booking" ] || [ -e "$scratch/core-only/bin/fake_gateway" ]; then
  echo "cmake --install --component phasekey installed the examples" >&2; exit 1
fi
rm -rf "$scratch/core-only"

# One version everywhere: the CLI, the CMake package (find_package below asks
# for it) and the pkg-config files.
version="$("$scratch/prefix/bin/phasekey" --version)"; version="${version#phasekey }"
for pc in phasekey phasekey-tools phasekey-phases phasekey-client; do
  got="$(PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig" pkg-config --modversion "$pc")"
  [ "$got" = "$version" ] || { echo "$pc.pc says version $got, phasekey --version $version" >&2; exit 1; }
done

cmake -S "$here" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" -DCMAKE_BUILD_TYPE=Release \
      -DPHASEKEY_EXPECTED_VERSION="$version" >"$scratch/configure.log"
cmake --build "$scratch/build" -j2 >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log" >&2; exit 1; }
"$scratch/build/consumer" "$scratch/pg"

# The same program through pkg-config, from a moved installation.
mv "$scratch/prefix" "$scratch/moved"
flags="$(PKG_CONFIG_PATH="$scratch/moved/lib/pkgconfig" pkg-config --cflags --libs phasekey-tools phasekey-phases phasekey-client)"
case "$flags" in *"$scratch/moved/"*) ;; *) echo "pkg-config flags do not follow the moved tree: $flags" >&2; exit 1;; esac
# shellcheck disable=SC2086  # the flags are words
g++ -O1 -Wall -Wextra -Werror "$here/main.cc" -o "$scratch/consumer-pc" $flags >"$scratch/pc-build.log" 2>&1 \
  || { echo "g++ $here/main.cc $flags" >&2; cat "$scratch/pc-build.log" >&2; exit 1; }
"$scratch/consumer-pc" "$scratch/pg"
