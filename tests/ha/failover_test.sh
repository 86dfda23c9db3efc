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
#
#   failover_test.sh RIDE_BOOKING PHASEKEY_CLI [chaos flags...]
set -euo pipefail

[ "$#" -ge 2 ] || { echo "usage: failover_test.sh RIDE_BOOKING PHASEKEY_CLI [chaos flags...]" >&2; exit 2; }
readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly RIDE_BOOKING="$1" CLI="$2"
shift 2

# Inside the formation: migrate through the CLI with the multi-host URL
# (what an operator runs), then the chaos run. 8 clients for 60 s: the
# switchover falls at 9 s, the primary kill at 30 s, and each settles
# (~5 s and ~15 s on a 2-core machine) well before the clients stop.
inside() {
  "$CLI" migrate --database-url "$DATABASE_URL"
  "$RIDE_BOOKING" chaos --database-url "$DATABASE_URL" --clients 8 --duration-s 60 --kills 0 --no-progress \
    --event "0.15:$HERE/formation.sh switchover" --event "0.5:$HERE/formation.sh kill-primary" "$@"
}

if [ "${1:-}" = "--inside" ]; then
  shift
  inside "$@"
  exit
fi

report="$(mktemp)"
trap 'rm -f "$report"' EXIT
start=$SECONDS
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
echo "failover_test: PASS" >&2
