#!/usr/bin/env bash
# Two builds side by side: CPU time per POST on SQLite and on PostgreSQL (one instance,
# `synchronous_commit = off`, TCP on loopback), alternating A, B, A, B… so that the machine's
# slower and faster spells fall on both. Each run: a fresh database with 1,000 users stored (then
# `ANALYZE` on PostgreSQL), 4 s of warm-up, then 10 s of POST /v1/receipts at 64 connections (`CONNECTIONS`)
# (post.lua) against `receiptd simulate` answering at once; `perf stat -e task-clock` counts the
# CPU time of receiptd (and of PostgreSQL's backends) over 8 s of those 10, divided by the POSTs
# answered in them (0.8 of the run's: the rate is steady by then). No allocation counting, unlike
# scaling.sh, whose LD_PRELOAD counter costs receiptd time of its own.
# Needs: perf (linux-perf), wrk, bc, postgresql.
# Usage: [CONNECTIONS=64] Benchmarks/cpu-per-post.sh DIR_A DIR_B [pairs, default 3]   (each DIR holds a
# receiptd); CONNECTIONS=1 gives a POST's latency alone (p50), its round trips included.
set -euo pipefail
if [ "${1:-}" != --one ]; then
  a=${1:?DIR_A}; b=${2:?DIR_B}; pairs=${3:-3}
  for database in sqlite postgresql; do
    for i in $(seq "$pairs"); do
      for dir in "$a" "$b"; do
        echo "$database $dir $("$0" --one "$dir" "$database")"
      done
    done
  done | awk '{print; fflush()} {cpu[$1" "$2] += $NF; n[$1" "$2]++} END {
    for (k in cpu) printf "mean %s: %.3f ms of CPU per POST over %d runs\n", k, cpu[k] / n[k], n[k] | "sort" }'
  exit 0
fi
# --one DIR DATABASE: one run, printing "POST/s R; p50 L; CPU ms per POST C".
bin=$2 database=$3 connections=${CONNECTIONS:-64}
threads=$((connections < 2 ? connections : 2))
set -- 10
source "$(dirname "$0")/lib.sh"
cd "$out"
chmod 777 "$out"
simulator "$bin"
extra=()
if [ "$database" = postgresql ]; then
  postgres_cluster 18320
  as_postgres psql "$pg/postgres" -qc "CREATE DATABASE p" -c "ALTER DATABASE p SET synchronous_commit = off" >/dev/null
  extra=(RECEIPTD_DATABASE_URL="$pg/p" RECEIPTD_DATABASE_CONNECTIONS=4)
fi
env "${receiptd_env[@]}" "${extra[@]}" "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
server=$!
for _ in $(seq 400); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.05; done
seq 1000 | xargs -P 32 -I{} sh -c '
  receipt=$(printf "active_monthly:g{}" | base64 -w0)
  curl -s -o /dev/null -X POST http://127.0.0.1:18095/v1/receipts \
    -H "Authorization: Bearer bench-public" -d "{\"app_user_id\":\"g{}\",\"receipt_data\":\"$receipt\"}"'
[ "$database" = sqlite ] || as_postgres psql "$pg/p" -qc ANALYZE
wrk -t"$threads" -c"$connections" -d4s -s "$here/post.lua" http://127.0.0.1:18095/v1/receipts >/dev/null
counted=$server
[ "$database" = sqlite ] || counted="$server,$(pgrep -d, -P "$(head -1 "$out/pg/postmaster.pid")")"
wrk -t"$threads" -c"$connections" -d10s --timeout 10s --latency -s "$here/post.lua" http://127.0.0.1:18095/v1/receipts \
  >"$out/wrk.txt" &
load=$!
sleep 1
perf stat -e task-clock -x, -p "$counted" -- sleep 8 2>"$out/stat.txt"
wait "$load"
posts=$(awk '/requests in/{print $1}' "$out/wrk.txt")
cpu_ms=$(awk -F, '/task-clock/{print $1}' "$out/stat.txt")
echo "POST/s $(awk '/Requests\/sec/{print $2}' "$out/wrk.txt"); p50 $(awk '$1 == "50%" {print $2}' "$out/wrk.txt"); CPU ms per POST $(echo "scale=3; $cpu_ms / ($posts * 0.8)" | bc | sed 's/^\./0./')"
