#!/usr/bin/env bash
# What keeping the chart rollups costs per POST (issue 62: "the rollup keeper's cost per POST
# halved"), on data Benchmarks/analytics.sh kept (BENCH_DATA, its rollups built), SQLite, release:
# POST /v1/receipts at 64 connections for the run's seconds, every request a new user, with the
# keeper off and then on, PAIRS times (default 3) for each build named. With the keeper on, its
# CPU is counted until it has included the last POST (not only while the load runs), after it
# first took in the run before. Prints each run's rate and receiptd's CPU per POST, and per build
# the keeper's share: the median of (on − off) over the pairs.
# Needs: apt-get install -y wrk curl python3 bc
# Usage: BENCH_DATA=DIR [PAIRS=3] Benchmarks/keeper.sh [seconds, default 10] [BIN_DIR ...] (default: this checkout's release)
source "$(dirname "$0")/lib.sh"
[ -n "${BENCH_DATA:-}" ] && [ -f "$out/built" ] || { echo "BENCH_DATA must name data with its rollups built" >&2; exit 2; }
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$("$root/Scripts/release-bin.sh")")
pairs=${PAIRS:-3}
simulator "${bins[0]}"
run() { # run BIN TAG KEEP: one run; prints "rate per_post"
  env "${receiptd_env[@]}" RECEIPTD_REFRESHER_ENABLED=false RECEIPTD_ANALYTICS_KEEP_ROLLUPS="$3" \
    "$1/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
  local pid=$! before
  for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.1; done
  [ "$3" = true ] && caught_up
  before=$(cpu "$pid")
  UNIQUE_USERS="keeper-$2-$RANDOM$RANDOM" wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$here/post.lua" \
    http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
  [ "$3" = true ] && caught_up
  local n used
  n=$(awk '/requests in/{print $1}' "$out/wrk.txt")
  used=$(( $(cpu "$pid") - before ))
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  # Printed once it has stopped: the next run starts on its port.
  echo "$(rps) $(echo "scale=3; $used * 10 / $n" | bc)"
}
for pair in $(seq "$pairs"); do
  for b in "${!bins[@]}"; do
    read -r r0 c0 < <(run "${bins[$b]}" "$b-$pair-off" false)
    read -r r1 c1 < <(run "${bins[$b]}" "$b-$pair-on" true)
    echo "build $b pair $pair: keeper off $r0 req/s, $c0 ms CPU per POST; on $r1 req/s, $c1 ms (through its catch-up); keeper $(echo "$c1 - $c0" | bc) ms"
  done
done | tee "$out/keeper.txt"
for b in "${!bins[@]}"; do
  awk -v b="$b" '$2 == b {print $NF == "ms" ? $(NF-1) : $NF}' "$out/keeper.txt" | sort -n |
    awk -v b="$b" -v dir="${bins[$b]}" '{a[NR]=$1} END {printf "build %s (%s): the keeper %s ms CPU per POST (median of %d pairs)\n", b, dir, a[int((NR+1)/2)], NR}'
done
