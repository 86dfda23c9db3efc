#!/usr/bin/env bash
# The failover test (issue 11, docs/deployment.md): the ride service, the
# fake gateway and the re-drive worker under the chaos clients, against a
# pg_auto_failover formation (formation.sh) through the multi-host URL;
# mid-run a planned switchover, later a SIGKILL of the primary node so the
# monitor fails over. Passes only if the run's invariants hold (every 201 has
# its ride and exactly one charge, every request gets its final answer with
# its key, no provider key charged twice, no key left locked), both events
# ran and succeeded, each changed the primary, and each caused failed
# attempts that the clients retried through (else the test proved nothing).
# A passing run is added to failover.jsonl in the build tree's results
# folder; with PHASEKEY_RECORD_TO_DOCS=1 (./run.sh failover) to
# docs/results/failover.jsonl (the last six runs, one JSON object per line)
# instead, then rendered into docs/deployment.md by
# PHASEKEY_RENDER_DOC_RESULTS (tests/doc_results; ctest sets it, as it sets
# PHASEKEY_BUILD_DESCRIPTION, the build's type and sanitizers).
#
#   failover_test.sh RIDE_BOOKING PHASEKEY_CLI [chaos flags...]
set -euo pipefail

[ "$#" -ge 2 ] || { echo "usage: failover_test.sh RIDE_BOOKING PHASEKEY_CLI [chaos flags...]" >&2; exit 2; }
readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly RIDE_BOOKING="$1" CLI="$2"
shift 2
# The run's history (docs/reliability.md), checked after the run by the
# independent checker; kept when it fails. Made once, by the outer run.
export PHASEKEY_FAILOVER_HISTORY="${PHASEKEY_FAILOVER_HISTORY:-$(mktemp -d /tmp/phasekey-failover-history-XXXXXX)}"

# Inside the formation: migrate through the CLI with the multi-host URL
# (what an operator runs), then the chaos run. 8 clients for 60 s: the
# switchover falls at 9 s, the primary kill at 30 s, and each settles
# (~5 s and ~15 s on a 2-core machine) well before the clients stop.
inside() {
  "$CLI" migrate --database-url "$DATABASE_URL"
  "$RIDE_BOOKING" chaos --database-url "$DATABASE_URL" --clients 8 --duration-s 60 --kills 0 --no-progress \
    --history "$PHASEKEY_FAILOVER_HISTORY" --event "0.15:$HERE/formation.sh switchover" --event "0.5:$HERE/formation.sh kill-primary" "$@"
}

if [ "${1:-}" = "--inside" ]; then
  shift
  inside "$@"
  exit
fi

# The number after LABEL on the report's line starting with LABEL.
report_count() { sed -n "s/^  $1 *\([0-9][0-9]*\).*/\1/p" "$report" | head -1; }

# "<ms> <failed attempts>" of the event whose command ends in EVENT.
event_window() {
  sed -n "s/^event .*formation.sh $1 .* unavailable \([0-9][0-9]*\) ms .*, \([0-9][0-9]*\) failed attempts\$/\1 \2/p" \
    "$report" | head -1
}

# Appends this run to failover.jsonl (keeping the last six) in the build
# tree's results folder (PHASEKEY_RESULTS_DIR, which ctest sets), so a test
# run leaves the checkout as it found it. With PHASEKEY_RECORD_TO_DOCS=1
# (./run.sh failover) it goes to docs/results/failover.jsonl instead and the
# docs are rendered from it.
record_run() {
  local source_dir="${PHASEKEY_SOURCE_DIR:-$(cd "$HERE/../.." && pwd)}"
  local results="${PHASEKEY_RESULTS_DIR:-$source_dir/build-test/results}" line sw_ms sw_failed kp_ms kp_failed commit
  [ "${PHASEKEY_RECORD_TO_DOCS:-0}" = 1 ] && results="$source_dir/docs/results"
  commit="$(git -C "$source_dir" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  # Changes outside docs/ (which the recording writes) are in the binaries too.
  if [ -n "$(git -C "$source_dir" status --porcelain -- . ':(exclude)docs' 2>/dev/null | head -1)" ]; then
    commit+=" with uncommitted changes"
  fi
  read -r sw_ms sw_failed <<<"$(event_window switchover)"
  read -r kp_ms kp_failed <<<"$(event_window kill-primary)"
  local s503 s409 net requests
  s503="$(report_count 503s)" s409="$(report_count 409s)" net="$(report_count 'network errors')"
  requests="$(report_count requests)"
  for v in "$sw_ms" "$sw_failed" "$kp_ms" "$kp_failed" "$s503" "$s409" "$net" "$requests"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "failover_test: FAIL: the report lacks a figure to record" >&2; exit 1; }
  done
  line="$(printf '{"date": "%s", "commit": "%s", "build": "%s", "cores": %s, "load": "%s", ' \
    "$(date -u '+%Y-%m-%d %H:%M')" "$commit" \
    "${PHASEKEY_BUILD_DESCRIPTION:-unknown}" "$(nproc)" "$load_at_start")"
  line+="$(printf '"switchover_ms": %s, "switchover_failed": %s, "kill_ms": %s, "kill_failed": %s, ' \
    "$sw_ms" "$sw_failed" "$kp_ms" "$kp_failed")"
  line+="$(printf '"503s": %s, "409s": %s, "network_errors": %s, "requests": %s, "test_s": %s}' \
    "$s503" "$s409" "$net" "$requests" "$((SECONDS - start))")"
  mkdir -p "$results"
  (
    flock 9
    { tail -n 5 "$results/failover.jsonl" 2>/dev/null || true; echo "$line"; } >"$results/failover.jsonl.tmp"
    mv "$results/failover.jsonl.tmp" "$results/failover.jsonl"
  ) 9>"$results/.lock"
  echo "failover_test: run recorded in $results/failover.jsonl: $line" >&2
  [ "${PHASEKEY_RECORD_TO_DOCS:-0}" = 1 ] || return 0
  if [ -n "${PHASEKEY_RENDER_DOC_RESULTS:-}" ]; then
    "$PHASEKEY_RENDER_DOC_RESULTS" "$source_dir"
  else
    echo "failover_test: PHASEKEY_RENDER_DOC_RESULTS is not set: run render_doc_results $source_dir" >&2
  fi
}

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
start=$SECONDS
load_at_start="$(cut -d' ' -f1 /proc/loadavg)"
set +e
"$HERE/formation.sh" run "$0" "$RIDE_BOOKING" "$CLI" --inside "$@" | tee "$report"
code=${PIPESTATUS[0]}
set -e
echo "failover_test: formation and run took $((SECONDS - start)) s" >&2
[ "$code" -eq 0 ] || { echo "failover_test: FAIL: exit status $code (report above)" >&2; exit 1; }
grep -q '^chaos: PASS' "$report" || { echo "failover_test: FAIL: no chaos PASS line" >&2; exit 1; }
grep -q '^chaos: events: every event ran and succeeded' "$report" ||
  { echo "failover_test: FAIL: an event failed" >&2; exit 1; }
for e in switchover kill-primary; do
  grep -E "^event .*formation.sh $e .* unavailable [0-9]+ ms" "$report" >/dev/null ||
    { echo "failover_test: FAIL: the $e caused no failed attempt: nothing was tested" >&2; exit 1; }
done
python3 "$HERE/../history/check_history.py" "$PHASEKEY_FAILOVER_HISTORY" ||
  { echo "failover_test: FAIL: the history checker found a violation (history in $PHASEKEY_FAILOVER_HISTORY)" >&2; exit 1; }
grep -q '"kind":"event-end"' "$PHASEKEY_FAILOVER_HISTORY/history.jsonl" ||
  { echo "failover_test: FAIL: the history holds no event" >&2; exit 1; }
rm -rf "$PHASEKEY_FAILOVER_HISTORY"
record_run
echo "failover_test: PASS" >&2
