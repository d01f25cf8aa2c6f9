#!/usr/bin/env bash
# The crash harness: load (receipts and V1 notifications) with webhooks going to a slow
# webhook-sink, SIGKILL at random moments KILLS times (default 20), restart; then every
# acknowledged write must be there, every stored event must have reached the sink, and
# PRAGMA integrity_check must answer ok. Pass SEED to replay the same kill moments.
#   Scripts/crash-harness.sh [KILLS] [SEED]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$("$root/Scripts/release-bin.sh")
exec python3 "$root/Scripts/crash_harness.py" "$bin" "${1:-20}" ${2:+"$2"}
