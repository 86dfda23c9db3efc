#!/usr/bin/env bash
# "What each change bought" (docs/benchmarks.md): builds bench_durability at
# the commit before and after each performance change named in
# bench/levers.txt, runs them all in one window against the PostgreSQL at
# DATABASE_URL (alternating, ROUNDS times) and keeps the JSON in
# docs/results/benchmarks/levers/, which bench_report renders.
#   DATABASE_URL=... bench/levers.sh [ROUNDS]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${1:-2}"
OUT="$ROOT/docs/results/benchmarks/levers"
[ -n "${DATABASE_URL:-}" ] || { echo "levers.sh: DATABASE_URL is not set" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/*.json
grep -v '^#' "$ROOT/bench/levers.txt" >"$OUT/levers.txt"
mapfile -t COMMITS < <(grep -v '^#' "$ROOT/bench/levers.txt" | cut -d' ' -f1)
for c in "${COMMITS[@]}"; do
  dir="$ROOT/build-levers/$c"
  [ -d "$dir/src" ] || git -C "$ROOT" worktree add -f --detach "$dir/src" "$c" >/dev/null
  export CCACHE_BASEDIR="$dir/src" CCACHE_NOHASHDIR=1
  cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-Wno-restrict >"$dir/configure.log" 2>&1
  cmake --build "$dir/build" -j2 --target bench_durability >"$dir/build.log" 2>&1 ||
    { echo "levers.sh: building $c failed (see $dir/build.log)" >&2; exit 1; }
done
for round in $(seq 1 "$ROUNDS"); do
  for c in "${COMMITS[@]}"; do
    echo "==> round $round: $c"
    "$ROOT/build-levers/$c/build/bench/bench_durability" --benchmark_enable_random_interleaving=true \
      --benchmark_filter='durability/(phasekey|raw_two_commits)/' \
      --benchmark_out="$OUT/$c-$round.json" --benchmark_out_format=json >"$OUT/../levers-$c-$round.log" 2>&1
  done
done
rm -f "$OUT"/../levers-*.log
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/run.txt"
