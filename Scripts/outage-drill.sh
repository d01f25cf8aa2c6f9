#!/usr/bin/env bash
# The outage drill: Apple down for OUTAGE seconds (default 60), then back, against
# `receiptd simulate`. Prints the figures and exits 1 when a user was downgraded, a 503 lacked the
# stale document, Apple was called more than the circuit breaker allows, or receiptd never recovered.
#   Scripts/outage-drill.sh [OUTAGE_SECONDS] [USERS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$("$root/Scripts/release-bin.sh")
exec python3 "$root/Scripts/outage_drill.py" "$bin" "${1:-60}" "${2:-200}"
