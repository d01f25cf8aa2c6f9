#!/usr/bin/env bash
# README's test command, N runs in a row (10 unless told), with every core loaded by a CPU hog
# (Debian's stress-ng): a test that waits on the wall clock of a loaded machine shows up here.
# Prints each run's outcome, then every test that failed in any run with how often, then the
# totals; exits non-zero when a run failed.
#
#   Scripts/stress_tests.sh [runs] [arguments for swift test, e.g. --filter WebhookTests]
#
# RECEIPTD_TEST_DATABASE=postgresql in the environment runs the API suite's services on
# PostgreSQL, as CI's second pass does.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
shift || true
command -v stress-ng >/dev/null || { echo "stress-ng is missing (Debian: apt-get install stress-ng)" >&2; exit 2; }
swift build --build-tests
logs=$(mktemp -d)
stress-ng --cpu "$(nproc)" --quiet &
hog=$!
trap 'kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true' EXIT
passed=0
for run in $(seq 1 "$runs"); do
  started=$(date +%s)
  if swift test --skip-build "$@" >"$logs/$run.log" 2>&1; then
    outcome=passed
    passed=$((passed + 1))
  else
    outcome=FAILED
  fi
  summary=$(grep -E '^. Test run with' "$logs/$run.log" | tail -1 || true)
  echo "run $run/$runs: $outcome in $(($(date +%s) - started)) s — ${summary:-no summary (see $logs/$run.log)}"
done
echo "--- tests that failed, and in how many of $runs runs"
# Swift Testing prints "✘ Test name(…) failed after …" once per failed test (cases included).
cat "$logs"/*.log | grep -E '^✘ Test .* failed after' | grep -v '^✘ Test run with' | sed -E 's/^✘ Test (.*) failed after.*/\1/' \
  | sed -E 's/ with [0-9]+ test cases?$//' | sort | uniq -c | sort -rn || true
echo "--- $passed of $runs runs passed with $(nproc) cores loaded (logs: $logs)"
[ "$passed" -eq "$runs" ]
