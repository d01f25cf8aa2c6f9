#!/usr/bin/env bash
# Builds PRODUCTs (default receiptd) in release with the static Swift stdlib, into .build-static,
# and prints the folder holding the binaries. Shared by the benchmarks and the drills:
#   bin=$(Scripts/release-bin.sh [PRODUCT ...])
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
products=("$@")
[ ${#products[@]} -eq 0 ] && products=(receiptd)
echo "building release (static Swift stdlib): ${products[*]}…" >&2
build=(swift build -c release --static-swift-stdlib --scratch-path "$root/.build-static" --package-path "$root")
for product in "${products[@]}"; do "${build[@]}" --product "$product" >/dev/null; done
"${build[@]}" --show-bin-path
