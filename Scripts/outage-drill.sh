#!/usr/bin/env bash
# The outage drill (issue 6): Apple down for OUTAGE seconds (default 60), then back, against
# `receiptd simulate`. Prints the figures and exits 1 when a user was downgraded, a 503 lacked the
# stale document, Apple was called more than the circuit breaker allows, or receiptd never recovered.
#   Scripts/outage-drill.sh [OUTAGE_SECONDS] [USERS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
echo "building release…" >&2
swift build -c release --static-swift-stdlib --scratch-path "$root/.build-static" --package-path "$root" \
  --product receiptd >/dev/null
bin=$(swift build -c release --static-swift-stdlib --scratch-path "$root/.build-static" --package-path "$root" --show-bin-path)
exec python3 "$root/Scripts/outage_drill.py" "$bin" "${1:-60}" "${2:-200}"
