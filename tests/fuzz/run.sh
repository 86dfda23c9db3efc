#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for a bounded time each.
#   tests/fuzz/run.sh BUILD_DIR SECONDS [WORK_DIR]
# BUILD_DIR holds the fuzzers (configured with -DPHASEKEY_FUZZ=ON and
# CXX=clang++). Each target starts from its seed corpus
# (tests/fuzz/corpus/<target>/, read only) plus WORK_DIR/<target>/, where
# new inputs go (default: a temporary directory, removed afterwards). A
# crash, leak, timeout or sanitizer report fails the run; the input that
# caused it is saved as WORK_DIR/artifacts/<target>-crash-... and printed.
# Exit status: 0 when every target ran clean.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${1:?usage: tests/fuzz/run.sh BUILD_DIR SECONDS [WORK_DIR]}"
SECONDS_EACH="${2:?usage: tests/fuzz/run.sh BUILD_DIR SECONDS [WORK_DIR]}"
WORK_DIR="${3:-}"
TARGETS=(canonicalize_json idempotency_key http_handler)

cleanup=""
if [ -z "$WORK_DIR" ]; then
  WORK_DIR="$(mktemp -d)"
  cleanup="$WORK_DIR"
fi
trap '[ -n "$cleanup" ] && rm -rf "$cleanup"' EXIT
mkdir -p "$WORK_DIR/artifacts"

failed=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD_DIR/tests/fuzz/${t}_fuzzer"
  [ -x "$bin" ] || { echo "fuzz: $bin is missing (build with -DPHASEKEY_FUZZ=ON)" >&2; failed+=("$t"); continue; }
  mkdir -p "$WORK_DIR/$t"
  log="$WORK_DIR/$t.log"
  # Leaks are checked at exit of every run (detect_leaks); -timeout flags an
  # input that takes longer than 10 s; -rss_limit_mb a runaway allocation.
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$WORK_DIR/artifacts/$t-" \
    "$WORK_DIR/$t" "$HERE/corpus/$t" >"$log" 2>&1
  status=$?
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')"
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $status); last lines of its log:" >&2
    tail -40 "$log" >&2
    ls "$WORK_DIR/artifacts" >&2
    failed+=("$t")
  else
    echo "fuzz: $t ran ${runs:-?} inputs in ${SECONDS_EACH}s: no crash, leak or undefined behaviour"
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  [ -n "$cleanup" ] && { cp -r "$WORK_DIR/artifacts" "${BUILD_DIR}/fuzz-artifacts" 2>/dev/null; echo "fuzz: crashing inputs kept in $BUILD_DIR/fuzz-artifacts" >&2; }
  exit 1
fi
