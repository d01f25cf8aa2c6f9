#!/usr/bin/env bash
# The rollup keeper's CPU per holder, alone (issue 62: "the rollup keeper's cost per POST halved"),
# SQLite, release. Benchmarks/keeper.sh measures it as the difference of two loaded runs, whose
# spread is wider than the keeper; here nothing else runs while it works:
#   1. a fresh database, its (empty) rollups built by each build's keeper for its own format;
#   2. POST /v1/receipts at 64 connections for the run's seconds with the keeper off, every
#      request a new user (post.lua's fourteen receipts): that many holders changed, unapplied;
#   3. PAIRS times (default 3), each build in turn on a copy of that database and its own
#      rollups: receiptd started
#      with the keeper on and nothing else to do, its CPU counted (clock ticks of the process)
#      from the start until the rollups hold every change, divided by the holders changed.
# The count includes the process's start-up and the polls of a chart that say when the keeper
# is done (the same for every build); `RUN_EMPTY=1` also prints a start on the caught-up copy.
# `PERF_OUT=FILE` also records each catch-up's profile (`perf record --call-graph dwarf`, from the
# keeper's start until it is caught up) in FILE.N, N the build's place (needs linux-perf); the
# profiler's own load then counts in that run's CPU, so compare profiles, not those figures.
# Needs: apt-get install -y wrk curl python3 bc
# Usage: [PAIRS=3] Benchmarks/keeper-catchup.sh [seconds of POSTs, default 10] BIN_DIR [BIN_DIR ...]
source "$(dirname "$0")/lib.sh"
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$("$root/Scripts/release-bin.sh")")
pairs=${PAIRS:-3}
simulator "${bins[0]}"
start() { # start BIN KEEP: receiptd on the database in $out, until ready; sets pid
  env "${receiptd_env[@]}" RECEIPTD_REFRESHER_ENABLED=false RECEIPTD_ANALYTICS_KEEP_ROLLUPS="$2" \
    "$1/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.05; done
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }

# Each build's (empty) rollups, built for its own format before the POSTs: a build of another
# format would rebuild them rather than follow the changes.
for b in "${!bins[@]}"; do
  rm -f "$out"/bench-rollups.sqlite*
  start "${bins[$b]}" true
  caught_up
  stop
  mkdir -p "$out/rollups-$b"
  cp "$out"/bench-rollups.sqlite* "$out/rollups-$b/"
done
start "${bins[0]}" false
UNIQUE_USERS="catchup-$RANDOM$RANDOM" wrk -t2 -c64 -d"${secs}s" --timeout 10s -s "$here/post.lua" \
  http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
stop
holders=$(awk '/requests in/{print $1}' "$out/wrk.txt")
echo "$holders new holders posted ($(rps) POST/s, errors $(errors)) with the keeper off"
mkdir -p "$out/posted"
rm -f "$out"/bench-rollups.sqlite*
cp "$out"/bench.sqlite* "$out/posted/"

one() { # one BIN N: the keeper's catch-up on a copy of the posted database; prints "ms ms_per_holder"
  rm -f "$out"/bench*.sqlite*
  cp "$out/posted/"* "$out/rollups-$2/"* "$out/"
  local started
  started=$(date +%s%N)
  start "$1" true
  local profiler=
  if [ -n "${PERF_OUT:-}" ]; then
    perf record -F 999 --call-graph dwarf,16384 -p "$pid" -o "$PERF_OUT.$2" >/dev/null 2>&1 &
    profiler=$!
  fi
  caught_up
  if [ -n "$profiler" ]; then kill -INT "$profiler"; wait "$profiler" || true; fi
  local used elapsed
  used=$(cpu "$pid")
  elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
  if [ -n "${RUN_EMPTY:-}" ]; then
    stop
    start "$1" true
    caught_up
    echo "  (a start with nothing to catch up: $(( $(cpu "$pid") * 10 )) ms of CPU)" >&2
  fi
  stop
  echo "$elapsed $(echo "scale=4; $used * 10 / $holders" | bc)"
}
for pair in $(seq "$pairs"); do
  for b in "${!bins[@]}"; do
    read -r elapsed per < <(one "${bins[$b]}" "$b")
    echo "build $b pair $pair: caught up in $elapsed ms, $per ms of CPU per holder"
  done
done | tee "$out/catchup.txt"
for b in "${!bins[@]}"; do
  awk -v b="$b" '$2 == b {print $(NF-5)}' "$out/catchup.txt" | sort -n |
    awk -v b="$b" -v dir="${bins[$b]}" '{a[NR]=$1} END {printf "build %s (%s): %s ms of CPU per holder (median of %d)\n", b, dir, a[int((NR+1)/2)], NR}'
done
