#!/usr/bin/env bash
# Runs every benchmark family against the PostgreSQL at DATABASE_URL, writes
# the Google Benchmark JSON to bench/results/, keeps a copy of it in
# docs/results/benchmarks/ (committed) and regenerates docs/benchmarks.md and
# docs/img/*.png from that copy. Called by `./run.sh bench`, which
# builds the binaries and starts the server first.
#   bench/run_all.sh --build-dir DIR [--quick] [--only FAMILY]...
# With --only, just those families run: their JSON replaces theirs in
# docs/results/benchmarks/, the other families' results and run.txt stay,
# and run.txt gains rerun.<family>.* lines (started, commit, seconds, load
# averages) that docs/benchmarks.md's header reports, so a figure from a
# re-run is never passed off as one of the full run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR=""
QUICK=""
ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --quick) QUICK="--quick"; shift ;;
    --only) ONLY+=("$2"); shift 2 ;;
    *) echo "run_all.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$BUILD_DIR" ] || { echo "run_all.sh: --build-dir is required" >&2; exit 2; }
[ -n "${DATABASE_URL:-}" ] || { echo "run_all.sh: DATABASE_URL is not set" >&2; exit 2; }

RESULTS="$ROOT/bench/results"
DBOS_DIR="$BUILD_DIR/bench/dbos"
# pgbench (the hand-written floor of durability's raw baseline) and http (the
# service as deployed) run right after durability, whose in-process figures
# they are compared with. console (the operator console's keys table at
# 10^6 keys) is rendered into docs/console.md by tests/doc_results, not
# into docs/benchmarks.md, and so is capacity (the key table's bytes per
# row, WAL per ride, index sizes) into docs/capacity.md.
FAMILIES=(durability pgbench http contention throughput redrive fingerprint growth peer console capacity)
say() { printf '==> %s\n' "$*"; }
if [ "${#ONLY[@]}" -gt 0 ]; then
  for family in "${ONLY[@]}"; do
    [[ " ${FAMILIES[*]} " == *" $family "* ]] || { echo "run_all.sh: no family $family" >&2; exit 2; }
  done
  FAMILIES=("${ONLY[@]}")
fi

mkdir -p "$RESULTS" "$ROOT/docs/img"
rm -f "$RESULTS"/*.json "$RESULTS"/*.log "$RESULTS"/run.txt

# The DBOS side of the peer family: @dbos-inc/dbos-sdk from npm into the
# build directory. When it cannot be had, UNAVAILABLE says why; bench_peer
# then reports the reason instead of figures.
install_dbos() {
  mkdir -p "$DBOS_DIR"
  rm -f "$DBOS_DIR/UNAVAILABLE"
  cp "$ROOT/bench/dbos/package.json" "$ROOT/bench/dbos/ride_flow.mjs" "$DBOS_DIR/"
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "Node.js and npm are not installed (the DBOS peer needs Node.js >= 20)" >"$DBOS_DIR/UNAVAILABLE"
    return
  fi
  local major
  major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$major" -lt 20 ]; then
    echo "Node.js $(node --version) is too old (@dbos-inc/dbos-sdk 5.3.0 needs >= 20)" >"$DBOS_DIR/UNAVAILABLE"
    return
  fi
  say "installing @dbos-inc/dbos-sdk 5.3.0 with npm into $DBOS_DIR"
  if ! (cd "$DBOS_DIR" && timeout 300 npm install --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
    { echo "npm install of @dbos-inc/dbos-sdk 5.3.0 failed:"; tail -5 "$DBOS_DIR/npm.log"; } >"$DBOS_DIR/UNAVAILABLE"
  fi
}

COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null | head -1)" ]; then COMMIT="$COMMIT (with uncommitted changes)"; fi
export PHASEKEY_BENCH_COMMIT="$COMMIT"
export PHASEKEY_BENCH_COMMAND="./run.sh bench${QUICK:+ --quick}"
if [ "${#ONLY[@]}" -gt 0 ]; then
  PHASEKEY_BENCH_COMMAND="bench/run_all.sh${QUICK:+ --quick}$(printf ' --only %s' "${ONLY[@]}")"
fi
export PHASEKEY_BENCH_PG="${PHASEKEY_BENCH_PG:-DATABASE_URL}"
export PHASEKEY_BENCH_DBOS_DIR="$DBOS_DIR"
export PHASEKEY_BENCH_NODE="$(node --version 2>/dev/null || echo none)"

if [[ " ${FAMILIES[*]} " == *" peer "* ]]; then install_dbos; fi
{
  if [ -n "$QUICK" ]; then echo "mode=quick"; else echo "mode=full"; fi
  echo "command=$PHASEKEY_BENCH_COMMAND"
  echo "commit=$COMMIT"
  echo "started=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "nproc=$(nproc)"
  echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$RESULTS/run.txt"

# Flags per family: repetitions of baseline and phasekey interleave at random
# where a family repeats its runs; quick fingerprint runs are shorter.
family_flags() {
  case "$1" in
    durability|throughput|peer) echo "--benchmark_enable_random_interleaving=true" ;;
    fingerprint) [ -n "$QUICK" ] && echo "--benchmark_min_time=0.05" || echo "--benchmark_min_time=0.5" ;;
  esac
}

start_all=$SECONDS
failed=()
i=0
for family in "${FAMILIES[@]}"; do
  i=$((i + 1))
  say "[$i/${#FAMILIES[@]}] family $family${QUICK:+ (quick)}"
  start=$SECONDS
  set +e
  # shellcheck disable=SC2046
  "$BUILD_DIR/bench/bench_$family" $QUICK $(family_flags "$family") \
    --benchmark_out="$RESULTS/$family.json" --benchmark_out_format=json \
    --benchmark_counters_tabular=true 2>&1 | tee "$RESULTS/$family.log"
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" -eq 0 ] || failed+=("$family")
  echo "seconds.$family=$((SECONDS - start))" >>"$RESULTS/run.txt"
done
echo "total_seconds=$((SECONDS - start_all))" >>"$RESULTS/run.txt"
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS/run.txt"

# The results of this run are committed beside the report (the logs are
# not), so every figure in it can be recomputed:
#   bench_report docs/results/benchmarks docs/benchmarks.md docs/img
KEPT="$ROOT/docs/results/benchmarks"
mkdir -p "$KEPT"
if [ "${#ONLY[@]}" -gt 0 ]; then
  for family in "${FAMILIES[@]}"; do
    rm -f "$KEPT/$family.json"
    [ ! -f "$RESULTS/$family.json" ] || cp "$RESULTS/$family.json" "$KEPT/"
    [ ! -f "$KEPT/run.txt" ] || sed -i "/^rerun\.$family\./d" "$KEPT/run.txt"
    sed -n "s/^\(started\|commit\|mode\|loadavg_start\|loadavg_end\)=/rerun.$family.\1=/p;
            s/^seconds\.$family=/rerun.$family.seconds=/p" "$RESULTS/run.txt" >>"$KEPT/run.txt"
  done
else
  rm -f "$KEPT"/*.json "$KEPT"/run.txt
  cp "$RESULTS"/*.json "$RESULTS"/run.txt "$KEPT"/
fi

say "writing docs/benchmarks.md and docs/img/*.png"
"$BUILD_DIR/bench/bench_report" "$KEPT" "$ROOT/docs/benchmarks.md" "$ROOT/docs/img"
# The console family's table in docs/console.md and the capacity family's
# in docs/capacity.md (tests/doc_results).
if [ -x "$BUILD_DIR/tests/render_doc_results" ]; then
  "$BUILD_DIR/tests/render_doc_results" "$ROOT"
else
  echo "run_all.sh: no $BUILD_DIR/tests/render_doc_results: run it on $ROOT to update docs/console.md and docs/capacity.md" >&2
fi
say "benchmarks took $((SECONDS - start_all)) s"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "run_all.sh: families that failed: ${failed[*]} (see bench/results/<family>.log)" >&2
  exit 1
fi
