#!/usr/bin/env bash
# phasekey's front door.
#   ./run.sh demo   install what is missing, build (Release), run the demo
#   ./run.sh test   install what is missing, build with ASan and UBSan,
#                   run every test (ctest) under them, then the fuzz targets
#   ./run.sh build  install what is missing and build
#   ./run.sh deps   only install the Debian packages that are missing
#   ./run.sh docs   the API reference of the public headers (doxygen) in
#                   build-docs/html/; a doxygen warning fails it
#   ./run.sh bench [--quick] [--only FAMILY]...  build (Release, in
#                   build-bench/), run every benchmark family (or those
#                   named), regenerate docs/benchmarks.md and its plots
#   ./run.sh soak [SECONDS]  the randomized soak (default 300 s): the chaos
#                   run with a random crash point armed in every start of the
#                   service and the worker; prints the seed, then checks the
#                   run's history (.phasekey/soak-history) with
#                   tests/history/check_history.py (docs/reliability.md)
#   ./run.sh failover  the failover test (pg_auto_failover) in the test
#                   build, recording its figures in docs/results/failover.jsonl
#                   and rendering docs/deployment.md from them (./run.sh test
#                   runs it too, but keeps its figures in the build tree)
#   ./run.sh record  the tests whose figures docs/ quotes (crash matrix,
#                   malformed requests, failover), recording them into
#                   docs/results/ and rendering the docs from them
#   ./run.sh fuzz [SECONDS]  build the libFuzzer targets (clang, build-fuzz/)
#                   and run each for SECONDS (default 20; ./run.sh test does
#                   this too); tests/fuzz/run_long.sh runs them for long
# DATABASE_URL points the demo and the tests at an existing PostgreSQL;
# without it they start a private (embedded) PostgreSQL 15 server.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${PHASEKEY_BUILD_DIR:-$ROOT/build}"
JOBS="${PHASEKEY_JOBS:-2}"
# ccache (CMakeLists.txt uses it when present) hits across clones of the
# repository: paths are taken relative to the root, and the working
# directory is left out of the hash.
export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1

# Debian 12 package names (chromium: the operator console's browser test,
# tests/pg/console_browser_test.cc). libboost1.81-dev, never libboost-dev or
# libboost-all-dev (those are 1.74 and conflict with 1.81).
PACKAGES=(
  cmake g++ make pkg-config ccache gzip util-linux
  libpq-dev libpqxx-dev libboost1.81-dev libfmt-dev nlohmann-json3-dev
  libssl-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libsqlite3-dev
  postgresql-15 graphviz prometheus-cpp-dev
  iptables iproute2 faketime clang libclang-rt-14-dev clang-format
  postgresql-15-auto-failover pgbouncer python3 python3-yaml doxygen systemd prometheus
  chromium
)

# Only ./run.sh bench needs these: plots for docs/benchmarks.md, and the load
# generator of the http family (bench/http). pgbench, the durability family's
# hand-written floor, comes with postgresql-15.
BENCH_PACKAGES=(gnuplot-nox wrk)

# What ./run.sh docs needs: the API reference (docs/api/Doxyfile). Both are
# in PACKAGES too: the tests build the reference and fail on a warning
# (tests/docs/check_api_reference.py).
DOCS_PACKAGES=(doxygen python3)

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

# build TYPE [--target NAME]... [cmake -D options...]: configures $BUILD_DIR
# and builds the named targets, or every target when none is named.
build() {
  local type="${1:-Release}"; shift || true
  local options=() targets=()
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --target) targets+=("$2"); shift 2 ;;
      *) options+=("$1"); shift ;;
    esac
  done
  say "configuring ($type${options[*]:+, ${options[*]}}) in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$type" "${options[@]}" >"$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log" >&2; die "cmake configure failed (log above)"; }
  if [ "${#targets[@]}" -eq 0 ]; then
    say "building with $JOBS jobs"
    cmake --build "$BUILD_DIR" -j "$JOBS" || die "build failed (compiler output above)"
  else
    say "building ${targets[*]} with $JOBS jobs"
    cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}" || die "build failed (compiler output above)"
  fi
}

# Runs "$@" against DATABASE_URL, or against an embedded server in $1's dir.
with_database() {
  local pg_dir="$1"; shift
  if [ -n "${DATABASE_URL:-}" ]; then
    say "using DATABASE_URL"
    "$@"
  else
    say "starting embedded PostgreSQL in $pg_dir"
    "$BUILD_DIR/cli/phasekey" embedded-postgres --pg-dir "$pg_dir" -- "$@"
  fi
}

cmd_demo() {
  install_deps
  # Only what the demo runs: the phasekey tool (embedded server, migrate),
  # the ride service with its chaos driver, and the gateway it starts.
  build Release --target phasekey_cli --target ride_booking --target fake_gateway
  cd "$ROOT"
  local pg=()
  [ -n "${DATABASE_URL:-}" ] || pg=(--pg-dir "$ROOT/.phasekey/demo-postgres")
  say "phasekey migrate"
  "$BUILD_DIR/cli/phasekey" migrate "${pg[@]}" || die "migrations failed (see above)"
  # The services seal stored bodies under the demo's key-encryption key,
  # made once and kept beside the demo's database (docs/data-protection.md).
  local kek="$ROOT/.phasekey/demo-kek"
  if [ ! -s "$kek" ]; then
    mkdir -p "$ROOT/.phasekey"
    (umask 077 && echo "demo-1 $(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >"$kek")
  fi
  chmod 600 "$kek"
  say "ride_booking chaos: clients, gateway faults, SIGKILLed service, the re-drive worker"
  "$BUILD_DIR/examples/ride_booking/ride_booking" chaos "${pg[@]}" --kek-file "$kek" "$@" ||
    die "the chaos demo found a broken invariant (report above)"
}

# The sanitizers' settings: any report fails the process (so the test);
# known leaks of third-party libraries are suppressed in
# tests/sanitizers/lsan.supp.
export_sanitizer_options() {
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
  export LSAN_OPTIONS="suppressions=$ROOT/tests/sanitizers/lsan.supp"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
}

# The test build: AddressSanitizer and UndefinedBehaviorSanitizer over
# everything (the binaries the tests start included), crash points compiled
# in (phasekey/crash_point.h), in its own directory so release binaries never
# carry either. The benchmarks are built by ./run.sh bench, not here.
build_test_tree() {
  BUILD_DIR="${PHASEKEY_TEST_BUILD_DIR:-$ROOT/build-test}"
  build Debug -DPHASEKEY_SANITIZE=ON -DPHASEKEY_CRASH_POINTS=ON -DPHASEKEY_BUILD_BENCH=OFF "$@"
  export_sanitizer_options
}

# What git sees changed in the checkout (tracked and untracked, ignored
# files left out), or nothing outside a git checkout.
checkout_state() {
  git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || return 0
  git -C "$ROOT" status --porcelain=v1 --untracked-files=all
  git -C "$ROOT" diff --no-ext-diff HEAD 2>/dev/null | sha256sum
}

cmd_test() {
  install_deps
  build_test_tree
  cd "$ROOT"
  # A test run leaves the checkout as it found it: tests write into the
  # build tree, and only explicit commands (./run.sh bench, failover)
  # render into docs/.
  local before
  before="$(checkout_state)"
  say "running the tests under ASan and UBSan (ctest -j$JOBS)"
  with_database "$ROOT/.phasekey/test-postgres" \
    ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure --timeout 600 ||
    die "tests failed (see the output above)"
  if [ "$(checkout_state)" != "$before" ]; then
    git -C "$ROOT" status --short >&2
    die "the tests changed the checkout (git status above): a test must write into the build tree"
  fi
  say "all tests passed, no sanitizer report; the checkout is as it was"
  cmd_fuzz 20
}

# The randomized soak (docs/reliability.md): `ride_booking chaos` bounded by
# time, every start of the service and the worker armed with a random crash
# point, gateway faults on, clients that give up early so the worker finishes
# their keys, and every nemesis this machine allows (chaos/nemesis.h): kills,
# pauses past the lease and clock jumps always; database restarts with the
# soak's own server (no DATABASE_URL); partitions as root with iptables. A
# fault every 30 s or so. The seed is printed, and a failing run prints the
# command that replays its faults. The history is checked after; with
# PHASEKEY_RECORD_TO_DOCS=1 the checker's figures go to
# docs/results/ (as history_soak.json) and docs/reliability.md is rendered
# again.
cmd_soak() {
  local seconds="${1:-300}"
  [ "$#" -eq 0 ] || shift
  case "$seconds" in
    ''|*[!0-9]*) die "usage: ./run.sh soak [SECONDS] [ride_booking chaos flags]" ;;
  esac
  install_deps
  # Only what the soak runs: the test tree's tests are not needed for it.
  build_test_tree --target ride_booking --target fake_gateway --target phasekey_cli --target render_doc_results
  cd "$ROOT"
  local pg=() nemeses="kill,pause,clock-jump"
  if [ -z "${DATABASE_URL:-}" ]; then
    pg=(--pg-dir "$ROOT/.phasekey/soak-postgres")
    nemeses+=",db-restart"
    if [ "$(id -u)" -eq 0 ] && iptables -w -L INPUT -n >/dev/null 2>&1; then nemeses+=",partition"; fi
  fi
  local faults=$((seconds / 30 > 5 ? seconds / 30 : 5))
  say "soak: ${seconds}s of chaos with crash points armed; $faults faults of $nemeses"
  "$BUILD_DIR/cli/phasekey" migrate "${pg[@]}" || die "migrations failed (see above)"
  local history="$ROOT/.phasekey/soak-history"
  "$BUILD_DIR/examples/ride_booking/ride_booking" chaos "${pg[@]}" --duration-s "$seconds" --crash-points \
    --give-up-after 3 --faults "$faults" --nemesis "$nemeses" --no-progress --history "$history" "$@" ||
    die "the soak found a broken invariant (report, seed and replay command above)"
  python3 "$ROOT/tests/history/check_history.py" "$history" --json "$history/figures.json" ||
    die "the history checker found a violation in $history (above)"
  if [ "${PHASEKEY_RECORD_TO_DOCS:-}" = 1 ]; then
    local results="$ROOT/docs/results"
    cp "$history/figures.json" "$results/history_soak.json"
    "$BUILD_DIR/tests/render_doc_results" "$ROOT" || die "rendering docs/ failed"
    say "soak: figures recorded in $results (history_soak.json) and rendered into docs/reliability.md"
  fi
}

# The tests whose figures the docs quote, recorded into docs/results/ and
# rendered into the docs (./run.sh test keeps them in the build tree): the
# crash matrix, the malformed requests and the history checker's runs
# (docs/reliability.md), then the failover test (docs/deployment.md).
cmd_record() {
  install_deps
  build_test_tree
  cd "$ROOT"
  say "crash matrix, malformed requests and history checks, recording into docs/results/"
  with_database "$ROOT/.phasekey/test-postgres" env PHASEKEY_RECORD_TO_DOCS=1 \
    ctest --test-dir "$BUILD_DIR" -R '[.](CrashMatrixTest|MalformedRequestTest|HistoryTest|NemesisTest)[.]' --output-on-failure ||
    die "a recording test failed (see the output above)"
  cmd_failover
}

# The failover test, its figures recorded in docs/ (docs/deployment.md).
cmd_failover() {
  install_deps
  build_test_tree
  cd "$ROOT"
  say "failover test, recording its figures in docs/results/failover.jsonl"
  PHASEKEY_RECORD_TO_DOCS=1 ctest --test-dir "$BUILD_DIR" -L failover --output-on-failure ||
    die "the failover test failed (see the output above)"
}

# The libFuzzer targets of tests/fuzz (docs/reliability.md): a clang build of
# their own in build-fuzz/, each target run for $1 seconds from its seed
# corpus. Without clang++ this step says why; it fails only when clang should
# be there (it is in PACKAGES).
cmd_fuzz() {
  local seconds="${1:-20}" fuzz_dir="${PHASEKEY_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
  if ! command -v clang++ >/dev/null 2>&1; then
    if printf '%s\n' "${PACKAGES[@]}" | grep -qx clang; then
      die "fuzz: clang++ is missing although ./run.sh installs the Debian package clang"
    fi
    say "fuzz: skipped: clang++ is missing (Debian packages clang, libclang-rt-14-dev)"
    return
  fi
  say "fuzz: building the libFuzzer targets in $fuzz_dir"
  CXX=clang++ cmake -S "$ROOT" -B "$fuzz_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHASEKEY_FUZZ=ON \
    >"$fuzz_dir.configure.log" 2>&1 ||
    { cat "$fuzz_dir.configure.log" >&2; die "fuzz: cmake configure failed (log above)"; }
  cmake --build "$fuzz_dir" -j "$JOBS" || die "fuzz: build failed (compiler output above)"
  say "fuzz: every target for ${seconds}s"
  "$ROOT/tests/fuzz/run.sh" "$fuzz_dir" "$seconds" || die "fuzz: a target failed (its input and log above)"
}

# Benchmarks (docs/benchmarks.md): a Release build of their own, so the
# test build's cache is left alone. GCC 12 at -O3 reports a false -Wrestrict
# inside std::string (GCC bug 105329) in engine code, which -Werror would turn
# into a failed build; the warning is switched off for this build only.
cmd_bench() {
  local args=()
  while [ "$#" -gt 0 ]; do
    case "$1" in
      --quick) args+=(--quick); shift ;;
      --only) [ "$#" -ge 2 ] || die "usage: ./run.sh bench [--quick] [--only FAMILY]..."
              args+=(--only "$2"); shift 2 ;;
      *) die "usage: ./run.sh bench [--quick] [--only FAMILY]..." ;;
    esac
  done
  BUILD_DIR="${PHASEKEY_BUILD_DIR:-$ROOT/build-bench}"
  install_deps
  install_deps "${BENCH_PACKAGES[@]}"
  say "configuring (Release) in $BUILD_DIR"
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-Wno-restrict \
    >"$BUILD_DIR.configure.log" 2>&1 ||
    { cat "$BUILD_DIR.configure.log" >&2; die "cmake configure failed (log above)"; }
  say "building the benchmarks with $JOBS jobs"
  # render_doc_results writes the console family's table into docs/console.md.
  cmake --build "$BUILD_DIR" -j "$JOBS" --target phasekey_bench render_doc_results ||
    die "build failed (compiler output above)"
  cd "$ROOT"
  export PHASEKEY_BENCH_PG="DATABASE_URL"
  [ -n "${DATABASE_URL:-}" ] || PHASEKEY_BENCH_PG="embedded PostgreSQL 15 (phasekey embedded-postgres, default settings)"
  with_database "$ROOT/.phasekey/bench-postgres" \
    "$ROOT/bench/run_all.sh" --build-dir "$BUILD_DIR" "${args[@]}" ||
    die "benchmarks failed (see the output above and bench/results/*.log)"
}

# The API reference (docs/api/Doxyfile): the public headers of engine/,
# phases/ and client/ through doxygen into build-docs/html/, the headers'
# plain // comments shown to doxygen by docs/api/doxygen_filter.py. Warnings
# (an undocumented public symbol among them) are errors.
cmd_docs() {
  install_deps "${DOCS_PACKAGES[@]}"
  cd "$ROOT"
  mkdir -p build-docs
  local version
  version="$(sed -n 's/^project(phasekey VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
  say "doxygen: the API reference of phasekey $version into build-docs/html/"
  PHASEKEY_VERSION="$version" doxygen docs/api/Doxyfile ||
    { cat build-docs/warnings.log >&2; die "doxygen warned (above; build-docs/warnings.log)"; }
  say "API reference: build-docs/html/index.html"
}

case "${1:-}" in
  demo) shift; cmd_demo "$@" ;;
  test) cmd_test ;;
  build) install_deps; build "${2:-Release}" ;;
  deps) install_deps ;;
  docs) cmd_docs ;;
  bench) shift; cmd_bench "$@" ;;
  soak) shift; cmd_soak "$@" ;;
  failover) cmd_failover ;;
  record) cmd_record ;;
  fuzz) install_deps; cmd_fuzz "${2:-20}" ;;
  *) echo "usage: ./run.sh demo|test|build|deps|docs|bench [--quick]|soak [SECONDS]|failover|fuzz [SECONDS]" >&2; exit 2 ;;
esac
