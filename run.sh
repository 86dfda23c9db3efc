#!/usr/bin/env bash
# phasekey's front door.
#   ./run.sh demo   install what is missing, build (Release), run the demo
#   ./run.sh test   install what is missing, build, run every test (ctest)
#   ./run.sh build  install what is missing and build
#   ./run.sh deps   only install the Debian packages that are missing
#   ./run.sh bench [--quick]  build (Release, in build-bench/), run every
#                   benchmark family, regenerate docs/benchmarks.md and its plots
# DATABASE_URL points the demo and the tests at an existing PostgreSQL;
# without it they start a private (embedded) PostgreSQL 15 server.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${PHASEKEY_BUILD_DIR:-$ROOT/build}"
JOBS="${PHASEKEY_JOBS:-2}"

# Debian 12 package names. libboost1.81-dev, never libboost-dev or
# libboost-all-dev (those are 1.74 and conflict with 1.81).
PACKAGES=(
  cmake g++ make pkg-config ccache gzip util-linux
  libpq-dev libpqxx-dev libboost1.81-dev libfmt-dev nlohmann-json3-dev
  libssl-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  postgresql-15 graphviz prometheus-cpp-dev
)

# Only ./run.sh bench needs these (plots for docs/benchmarks.md).
BENCH_PACKAGES=(gnuplot-nox)

say() { printf '==> %s\n' "$*"; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

# install_deps [package...]: the given packages, or PACKAGES by default.
install_deps() {
  local wanted=("$@") missing=() p
  [ "$#" -gt 0 ] || wanted=("${PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    say "dependencies: all ${#wanted[@]} Debian packages present"
    return
  fi
  say "dependencies: installing ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq ||
    die "apt-get update failed; check the network or the apt sources, then rerun"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    die "apt-get install failed for: ${missing[*]}"
}

build() {
  local type="${1:-Release}"; shift || true
  say "configuring ($type${*:+, $*}) in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$type" "$@" >"$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log" >&2; die "cmake configure failed (log above)"; }
  say "building with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS" || die "build failed (compiler output above)"
}

# Runs "$@" against DATABASE_URL, or against an embedded server in $1's dir.
with_database() {
  local pg_dir="$1"; shift
  if [ -n "${DATABASE_URL:-}" ]; then
    say "using DATABASE_URL"
    "$@"
  else
    say "starting embedded PostgreSQL in $pg_dir"
    "$BUILD_DIR/engine/phasekey" embedded-postgres --pg-dir "$pg_dir" -- "$@"
  fi
}

cmd_demo() {
  install_deps
  build Release
  cd "$ROOT"
  local pg=()
  [ -n "${DATABASE_URL:-}" ] || pg=(--pg-dir "$ROOT/.phasekey/demo-postgres")
  say "phasekey migrate"
  "$BUILD_DIR/engine/phasekey" migrate "${pg[@]}" || die "migrations failed (see above)"
  say "ride_booking chaos: clients, gateway faults, SIGKILLed service, the re-drive worker"
  "$BUILD_DIR/examples/ride_booking/ride_booking" chaos "${pg[@]}" "$@" ||
    die "the chaos demo found a broken invariant (report above)"
}

cmd_test() {
  install_deps
  # The test build has the crash points compiled in (phasekey/crash_point.h);
  # it lives in its own directory so release binaries never carry them.
  BUILD_DIR="${PHASEKEY_TEST_BUILD_DIR:-$ROOT/build-test}"
  build Release -DPHASEKEY_CRASH_POINTS=ON
  cd "$ROOT"
  say "running the tests (ctest -j$JOBS)"
  with_database "$ROOT/.phasekey/test-postgres" \
    ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure --timeout 600 ||
    die "tests failed (see the output above)"
  say "all tests passed"
}

# Benchmarks (docs/benchmarks.md): a Release build of their own, so the
# test build's cache is left alone. GCC 12 at -O3 reports a false -Wrestrict
# inside std::string (GCC bug 105329) in engine code, which -Werror would turn
# into a failed build; the warning is switched off for this build only.
cmd_bench() {
  local quick=""
  case "${1:-}" in
    "") ;;
    --quick) quick="--quick" ;;
    *) die "usage: ./run.sh bench [--quick]" ;;
  esac
  BUILD_DIR="${PHASEKEY_BUILD_DIR:-$ROOT/build-bench}"
  install_deps
  install_deps "${BENCH_PACKAGES[@]}"
  say "configuring (Release) in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-Wno-restrict \
    >"$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log" >&2; die "cmake configure failed (log above)"; }
  say "building the benchmarks with $JOBS jobs"
  cmake --build "$BUILD_DIR" -j "$JOBS" --target phasekey_bench || die "build failed (compiler output above)"
  cd "$ROOT"
  export PHASEKEY_BENCH_PG="DATABASE_URL"
  [ -n "${DATABASE_URL:-}" ] || PHASEKEY_BENCH_PG="embedded PostgreSQL 15 (phasekey embedded-postgres, default settings)"
  with_database "$ROOT/.phasekey/bench-postgres" \
    "$ROOT/bench/run_all.sh" --build-dir "$BUILD_DIR" $quick ||
    die "benchmarks failed (see the output above and bench/results/*.log)"
}

case "${1:-}" in
  demo) shift; cmd_demo "$@" ;;
  test) cmd_test ;;
  build) install_deps; build "${2:-Release}" ;;
  deps) install_deps ;;
  bench) cmd_bench "${2:-}" ;;
  *) echo "usage: ./run.sh demo|test|build|deps|bench [--quick]" >&2; exit 2 ;;
esac
