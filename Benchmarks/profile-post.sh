#!/usr/bin/env bash
# Where a POST's CPU goes: `perf record -g` on the release receiptd (SQLite, the bench settings)
# while wrk posts receipts at 64 connections (post.lua) against `receiptd simulate` answering at
# once; prints the heaviest functions by their own time and by their callees', and the heap
# allocations per POST (Benchmarks/alloc_count.c). Keeps perf.data in PROFILE_DIR when set.
# Needs: apt-get install -y wrk gcc linux-perf libsqlite3-dev libcurl4-openssl-dev (and swift, to demangle)
# Usage: Benchmarks/profile-post.sh [seconds, default 10]
source "$(dirname "$0")/lib.sh"

bin=${RECEIPTD_BIN:-$("$root/Scripts/release-bin.sh")}
cd "$out"
gcc -O2 -shared -fPIC -o "$out/alloc_count.so" "$here/alloc_count.c" -ldl -lpthread
simulator "$bin"
env "${receiptd_env[@]}" LD_PRELOAD="$out/alloc_count.so" ALLOC_COUNT_FILE="$out/allocs" \
  "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
pid=$!
for _ in $(seq 400); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.05; done

# A warm-up, so that the profile is of a running service (caches filled, statements compiled).
wrk -t2 -c64 -d2s -s "$here/post.lua" http://127.0.0.1:18095/v1/receipts >/dev/null
sleep 0.2
before=$(cat "$out/allocs")
perf record -F 499 -g -o "$out/perf.data" -p "$pid" -- sleep "$secs" >/dev/null 2>&1 &
perf_pid=$!
wrk -t2 -c64 -d"${secs}s" --latency -s "$here/post.lua" http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
wait "$perf_pid" || true
sleep 0.2
n=$(awk '/requests in/{print $1}' "$out/wrk.txt")
echo "POSTs: $n in ${secs} s ($(rps) req/s); heap allocations per POST: $((($(cat "$out/allocs") - before) / n))"
echo
if [ -n "${PROFILE_DIR:-}" ]; then mkdir -p "$PROFILE_DIR" && cp "$out/perf.data" "$PROFILE_DIR/"; fi
report() { # report --children|--no-children LINES: perf's table, the symbol's column trimmed
  perf report -i "$out/perf.data" "$1" --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' |
    sed -E 's/[[:space:]]+-[[:space:]]+-[[:space:]]*$//' | swift demangle --simplified | cut -c1-180 | head -"$2" || true
}
echo "## by own time"
report --no-children 40
echo
echo "## by time with callees"
report --children 60
