#!/usr/bin/env bash
# The systemd units of this build (deploy/CMakeLists.txt configures them with
# the build's binaries) load cleanly and are hardened:
#   - `systemd-analyze verify` accepts each without a word (it exits 0 on
#     some mistakes, such as a bad value, and only warns: any output fails);
#   - `systemd-analyze security --offline` rates each one's exposure at most
#     MAX_EXPOSURE (0 is locked down, 10 is unprotected), and each keeps the
#     hardening options docs/deployment.md promises;
#   - first, the checker itself rejects a unit with a misspelt option and one
#     whose binary does not exist, so a checker that passes everything fails.
# Usage: systemd_units_test.sh UNITS_DIR. With CI set, a missing
# systemd-analyze fails instead of skipping.
set -euo pipefail

units_dir=${1:?usage: systemd_units_test.sh UNITS_DIR}
MAX_EXPOSURE=2.5

if ! command -v systemd-analyze >/dev/null; then
  if [ -n "${CI:-}" ]; then echo "FAIL: systemd-analyze not installed (Debian package systemd)"; exit 1; fi
  echo "SKIP: systemd-analyze not installed"; exit 77
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# verify UNIT: passes when systemd-analyze verify exits 0 and prints nothing.
verify() {
  local out
  if ! out=$(systemd-analyze verify "$1" 2>&1) || [ -n "$out" ]; then
    printf '%s\n' "$out"
    return 1
  fi
}

units=("$units_dir"/*.service)
[ -e "${units[0]}" ] || { echo "FAIL: no units in $units_dir"; exit 1; }
[ "${#units[@]}" -ge 4 ] || { echo "FAIL: expected 4 units, found ${#units[@]}"; exit 1; }

# The checker can fail.
first=${units[0]}
sed 's/^ProtectSystem=strict$/ProtectSytem=strict/' "$first" > "$work/misspelt.service"
sed -E 's#^ExecStart=[^ ]+#ExecStart=/nonexistent/phasekey#' "$first" > "$work/missing-binary.service"
for broken in misspelt missing-binary; do
  if verify "$work/$broken.service" >/dev/null; then
    echo "FAIL: the checker accepted $broken.service"; exit 1
  fi
done

failed=0
for unit in "${units[@]}"; do
  name=$(basename "$unit")
  if ! verify "$unit"; then
    echo "FAIL: $name does not verify"; failed=1; continue
  fi
  for option in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes UMask=0077 \
                'CapabilityBoundingSet='; do
    grep -qx -- "$option" "$unit" || { echo "FAIL: $name lacks $option"; failed=1; }
  done
  exposure=$(systemd-analyze security --offline=true "$unit" 2>/dev/null |
             sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  if [ -z "$exposure" ]; then
    echo "FAIL: $name: no exposure level from systemd-analyze security"; failed=1; continue
  fi
  if awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e > m) }'; then
    echo "FAIL: $name: exposure $exposure over $MAX_EXPOSURE"; failed=1; continue
  fi
  echo "ok: $name verifies; exposure $exposure"
done
exit "$failed"
