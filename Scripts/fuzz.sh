#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ and runs each for SECONDS (default 60), side by side.
# fuzz-signed-data reads Apple's test PKI from Sources/ReceiptTesting/Fixtures/SignedData.
# Exits non-zero on any finding; the input is saved under .build-fuzz/artifacts/<target>/.
#
#   Scripts/fuzz.sh [SECONDS] [TARGET ...]      targets: fuzz-differential fuzz-parser fuzz-signed-data
#
# Needs Debian's node-llhttp (llhttp's C sources, the reference parser):
#   apt-get install -y node-llhttp
# Replay one input: .build-fuzz/release/fuzz-differential FILE
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(fuzz-differential fuzz-parser fuzz-signed-data)

if [ ! -f /usr/share/llhttp/llhttp.c ]; then
  echo "fuzz.sh: llhttp's C sources are missing: apt-get install -y node-llhttp" >&2
  exit 2
fi

scratch="$root/.build-fuzz"
# --sanitize=fuzzer for SwiftPM (C targets and the link), -sanitize=fuzzer,address for swiftc:
# `--sanitize=fuzzer --sanitize=address` drops one of the two at random on this toolchain.
# -enable-testing: fuzz-signed-data reaches AppStore's fact mapping and ReceiptCore's derivation.
build() {
  swift build -c release --package-path "$root/Fuzz" --scratch-path "$scratch" --product "$1" \
    --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing >"$scratch/$1.build.log" 2>&1
}
mkdir -p "$scratch"
# The Fuzz package compiles ../Sources by path, and SwiftPM keeps its build plan when a file there
# is added, renamed or removed ("cannot find … in scope", "missing inputs") or a target gains a
# dependency ("no such module"). So the plan is made again whenever the list of Swift files or a
# manifest differs from what the last plan was made from.
plan=$(cd "$root" && { find Sources Fuzz/Sources -name '*.swift' | sort; cat Package.swift Fuzz/Package.swift; } | sha256sum)
if [ "$(cat "$scratch/plan.sha256" 2>/dev/null)" != "$plan" ]; then
  rm -f "$scratch/release.yaml" "$scratch"/*/release/description.json "$scratch/plan.sha256"
fi
for target in "${targets[@]}"; do
  # Any failure stops here, never running a binary left from an earlier build.
  if ! build "$target"; then
    grep -E "error" "$scratch/$target.build.log" >&2
    echo "fuzz.sh: $target does not build" >&2
    exit 2
  fi
  grep -E "warning: " "$scratch/$target.build.log" || true
  test -x "$scratch/release/$target"
done
echo "$plan" >"$scratch/plan.sha256"

pids=()
for target in "${targets[@]}"; do
  corpus="$scratch/corpus/$target"
  artifacts="$scratch/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  # The working corpus grows across runs; Fuzz/Corpus (HTTP) and Fuzz/Seeds/<target> hold the
  # committed seeds.
  seeds="$root/Fuzz/Corpus" dict="$root/Fuzz/http.dict" max_len=4096
  if [ "$target" = fuzz-signed-data ]; then
    seeds="$root/Fuzz/Seeds/$target" dict="$root/Fuzz/signed-data.dict" max_len=16384
  fi
  SWIFT_BACKTRACE=enable=no "$scratch/release/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "$seeds" >"$scratch/$target.log" 2>&1 &
  pids+=($!)
done

status=0
for i in "${!targets[@]}"; do
  target="${targets[$i]}"
  log="$scratch/$target.log"
  if wait "${pids[$i]}"; then
    execs=$(grep -o "stat::number_of_executed_units: [0-9]*" "$log" | awk '{print $2}')
    cov=$(grep -o "cov: [0-9]*" "$log" | tail -1 | awk '{print $2}')
    echo "$target: no finding in ${seconds}s, ${execs:-?} inputs run, coverage ${cov:-?} edges"
  else
    status=1
    echo "$target: FINDING (log $log)"
    grep -E -A12 "Fatal error|ERROR: (libFuzzer|AddressSanitizer)" "$log" | head -40
    grep -E "Test unit written|^Base64" "$log" || true
  fi
done
exit $status
