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
# `DATABASE=postgresql`: the same on a PostgreSQL cluster of its own (`synchronous_commit = off`,
# TCP on loopback), each run on a copy of the posted database (`CREATE DATABASE … TEMPLATE`) told
# that its rollups are the build's, built and empty; the CPU counted is receiptd's and the
# cluster's (postmaster, backends, writers) from the start until caught up. Name the oldest build
# first: it makes the posted database, which the others migrate forward.
# Needs: apt-get install -y wrk curl python3 bc (and postgresql)
# Usage: [PAIRS=3] [DATABASE=sqlite|postgresql] Benchmarks/keeper-catchup.sh [seconds of POSTs, default 10]
#        BIN_DIR [BIN_DIR ...]
source "$(dirname "$0")/lib.sh"
shift || true
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("$("$root/Scripts/release-bin.sh")")
pairs=${PAIRS:-3}
simulator "${bins[0]}"
database=${DATABASE:-sqlite}
url=() # the database receiptd runs on: none for SQLite's in $out
start() { # start BIN KEEP: receiptd on the database (`url`, else SQLite's in $out), until ready; sets pid
  env "${receiptd_env[@]}" "${url[@]}" RECEIPTD_REFRESHER_ENABLED=false RECEIPTD_ANALYTICS_KEEP_ROLLUPS="$2" \
    "$1/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.05; done
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }
post() { # POSTs of new users for the run's seconds with the keeper off, on the database receiptd opens
  start "${bins[0]}" false
  UNIQUE_USERS="catchup-$RANDOM$RANDOM" wrk -t2 -c64 -d"${secs}s" --timeout 10s -s "$here/post.lua" \
    http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
  stop
  holders=$(awk '/requests in/{print $1}' "$out/wrk.txt")
  echo "$holders new holders posted ($(rps) POST/s, errors $(errors)) with the keeper off"
}

if [ "$database" = postgresql ]; then
  postgres_cluster 18322
  # No autovacuum: its passes, landing in one run and not another, are the widest noise here (the
  # posted database is analysed once, below).
  psql "$pg/postgres" -qc "ALTER SYSTEM SET synchronous_commit = off" -c "ALTER SYSTEM SET autovacuum = off" \
    -c "SELECT pg_reload_conf()" >/dev/null
  cluster_cpu() { # clock ticks of the cluster's processes so far
    local sum=0 p
    for p in $(head -1 "$out/pg/postmaster.pid") $(pgrep -P "$(head -1 "$out/pg/postmaster.pid")"); do
      sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$sum"
  }
  # Each build's fingerprint of empty rollups, built for its own format.
  fingerprints=()
  for b in "${!bins[@]}"; do
    psql "$pg/postgres" -qc "CREATE DATABASE empty_$b"
    url=(RECEIPTD_DATABASE_URL="$pg/empty_$b")
    start "${bins[$b]}" true
    caught_up
    stop
    fingerprints[$b]=$(psql "$pg/empty_$b" -Atc "SELECT fingerprint FROM rollup_state")
  done
  psql "$pg/postgres" -qc "CREATE DATABASE posted"
  url=(RECEIPTD_DATABASE_URL="$pg/posted")
  post
  # Its statistics, as autovacuum would have them within a minute: without, the planner reads the
  # new holders' facts by scanning their tables.
  psql "$pg/posted" -qc ANALYZE
  copy() { # copy N: a copy of the posted database whose rollups are build N's, built and empty
    psql "$pg/postgres" -q -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS run" \
      -c "CREATE DATABASE run TEMPLATE posted"
    psql "$pg/run" -q -v fp="${fingerprints[$1]}" <<<"UPDATE rollup_state SET fingerprint = :'fp', phase = 'ready',
      rebuild_after = NULL, changes_through = 0"
    # The copy's pages written out now, not by the checkpointer during the run.
    psql "$pg/run" -qc CHECKPOINT
    url=(RECEIPTD_DATABASE_URL="$pg/run")
  }
  followed() { # followed N: whether the run's keeper followed the changes (its fingerprint was build N's)
    [ "$(psql "$pg/run" -q -v fp="${fingerprints[$1]}" -At <<<"SELECT fingerprint = :'fp' FROM rollup_state")" = t ] ||
      echo "build $1 rebuilt its rollups rather than following the changes: its fingerprint differs" >&2
  }
else
  cluster_cpu() { echo 0; }
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
  post
  mkdir -p "$out/posted"
  rm -f "$out"/bench-rollups.sqlite*
  cp "$out"/bench.sqlite* "$out/posted/"
  copy() { # copy N: a copy of the posted database beside build N's empty rollups
    rm -f "$out"/bench*.sqlite*
    cp "$out/posted/"* "$out/rollups-$1/"* "$out/"
  }
  followed() { :; }
fi

one() { # one BIN N: the keeper's catch-up on a copy of the posted database; prints "ms ms_per_holder"
  copy "$2"
  local started before
  started=$(date +%s%N)
  before=$(cluster_cpu)
  start "$1" true
  local profiler=
  if [ -n "${PERF_OUT:-}" ]; then
    perf record -F 999 --call-graph dwarf,16384 -p "$pid" -o "$PERF_OUT.$2" >/dev/null 2>&1 &
    profiler=$!
  fi
  caught_up
  if [ -n "$profiler" ]; then kill -INT "$profiler"; wait "$profiler" || true; fi
  local used elapsed own
  own=$(cpu "$pid")
  used=$(( own + $(cluster_cpu) - before ))
  elapsed=$(( ($(date +%s%N) - started) / 1000000 ))
  followed "$2"
  if [ -n "${RUN_EMPTY:-}" ]; then
    stop
    start "$1" true
    caught_up
    echo "  (a start with nothing to catch up: $(( $(cpu "$pid") * 10 )) ms of CPU)" >&2
  fi
  stop
  echo "$elapsed $(echo "scale=4; $used * 10 / $holders" | bc) $(echo "scale=4; $own * 10 / $holders" | bc)"
}
for pair in $(seq "$pairs"); do
  for b in "${!bins[@]}"; do
    read -r elapsed per own < <(one "${bins[$b]}" "$b")
    echo "build $b pair $pair: caught up in $elapsed ms, $per ms of CPU per holder$(
      [ "$database" = postgresql ] && echo " (receiptd $own, the cluster the rest)")"
  done
done | tee "$out/catchup.txt"
for b in "${!bins[@]}"; do
  awk -v b="$b" '$2 == b {for (i = 1; i <= NF; i++) if ($i == "CPU" && $(i + 1) == "per") print $(i - 3)}' "$out/catchup.txt" | sort -n |
    awk -v b="$b" -v dir="${bins[$b]}" '{a[NR]=$1} END {printf "build %s (%s): %s ms of CPU per holder (median of %d)\n", b, dir, a[int((NR+1)/2)], NR}'
done
