#!/usr/bin/env bash
# Retakes docs/console.md's screenshots (docs/img/console-*.png): runs the
# console's browser test (tests/pg/console_browser_test.cc), which drives the
# real console in headless chromium, with PHASEKEY_CONSOLE_SCREENSHOTS set.
# Needs a build in build-test (./run.sh build or the cmake lines of
# docs/contributing.md) and chromium.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build-test}"
"$build/cli/phasekey" embedded-postgres --pg-dir "$root/.phasekey/screenshots-postgres" -- \
  env PHASEKEY_CONSOLE_SCREENSHOTS="$root/docs/img" "$build/tests/pg_console_browser_test"
ls -l "$root"/docs/img/console-*.png
