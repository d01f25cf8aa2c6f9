#!/usr/bin/env bash
# SQLite against PostgreSQL, one instance and three behind HAProxy, on loopback, next to the
# Hummingbird peer in the same run. For each setup, on a fresh database:
#   1. 1,000 users stored (g1…g1000, an active subscription each), then on PostgreSQL `ANALYZE`
#      (what autovacuum does within its first minute, or copy-data at its end: without statistics
#      the planner reads whole tables for the document's joins);
#   2. POST /v1/receipts at 64 connections (post.lua: 10,000 users, 14 scripted scenarios) against
#      `receiptd simulate` answering at once, so the figure is receiptd and its database; the CPU
#      time every process of the setup spent meanwhile (receiptd, and PostgreSQL's postmaster,
#      backends and writers, and HAProxy; from /proc/PID/stat), per POST answered;
#   3. GET /v1/subscribers/{id} at 64 connections over the 1,000 users.
# Setups, each with the durability of its commits said:
#   - SQLite (the default): WAL with `synchronous = NORMAL`: a commit survives a crash of the
#     process, a power cut can undo the last ones (sqlite.org/pragma.html#pragma_synchronous);
#   - PostgreSQL, one instance (database.connections 4 for saves, database.readers 2), with its
#     defaults (`synchronous_commit = on`: a commit waits for its WAL to be flushed to disk), then
#     with `synchronous_commit = off` (a crash of the server, not only a power cut, can undo the
#     last commits, never corrupt: the class of SQLite's NORMAL; postgresql.org/docs/15/wal-async-commit.html),
#     over TCP on loopback and then over the server's Unix socket;
#   - PostgreSQL, three instances (3 and 2 each) behind HAProxy (round robin, /readyz checks),
#     both ways.
# Everything shares this machine's cores: wrk, the simulator, PostgreSQL, HAProxy and the instances.
# Needs: apt-get install -y nginx wrk bc gcc postgresql haproxy libsqlite3-dev libcurl4-openssl-dev libpq-dev
# Usage: Benchmarks/scaling.sh [seconds per run, default 10]
#   RECEIPTD_BIN=DIR: the receiptd in DIR instead of this checkout's release build (to compare two).
#   SETUPS="sqlite pg-off": only these setups (of sqlite pg-on pg-off pg-unix three-on three-off;
#   default all), for side-by-side runs of two builds that need only some rows.
source "$(dirname "$0")/lib.sh"

bin=${RECEIPTD_BIN:-$("$root/Scripts/release-bin.sh")}
"$bench/start-peers.sh" >&2
cd "$out"
chmod 777 "$out"
simulator "$bin"

# PostgreSQL's defaults but for the port: commits wait for the disk, as SQLite's
# `synchronous = NORMAL` in WAL mode does not (a power cut can undo its last commits).
postgres_cluster 18320

cat >"$out/get.lua" <<'LUA'
wrk.headers["Authorization"] = "Bearer bench-secret"
function request() return wrk.format("GET", "/v1/subscribers/g" .. math.random(1000)) end
LUA

# Every instance counts its heap allocations (Benchmarks/alloc_count.c), for "allocations per POST".
gcc -O2 -shared -fPIC -o "$out/alloc_count.so" "$here/alloc_count.c" -ldl -lpthread
pids=()
instance() { # instance PORT [ENV=VALUE ...]: receiptd with the bench settings, until ready
  local port=$1
  shift
  env "${receiptd_env[@]}" RECEIPTD_HTTP_PORT="$port" LD_PRELOAD="$out/alloc_count.so" \
    ALLOC_COUNT_FILE="$out/allocs-$port" "$@" "$bin/receiptd" serve --config-dir "$root/Config" \
    >>"$out/receiptd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 400); do curl -sf -o /dev/null "http://127.0.0.1:$port/readyz" && return; sleep 0.05; done
  echo "receiptd did not start" >&2
  tail -20 "$out/receiptd.log" >&2
  exit 1
}
stop_all() {
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}
seed() { # seed PORT: g1…g1000, each with an active subscription
  seq 1000 | xargs -P 32 -I{} sh -c '
    receipt=$(printf "active_monthly:g{}" | base64 -w0)
    code=$(curl -s -o /dev/null -w "%{http_code}" -X POST http://127.0.0.1:'"$1"'/v1/receipts \
      -H "Authorization: Bearer bench-public" -d "{\"app_user_id\":\"g{}\",\"receipt_data\":\"$receipt\"}")
    [ "$code" = 200 ] || { echo "seeding g{} answered $code" >&2; exit 255; }'
}
load() { wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$2" "$1" >"$out/wrk.txt"; }
# CPU time (utime + stime, in clock ticks) of the processes given, and of PostgreSQL's (the
# postmaster and its children) when the setup uses it.
ticks() { # ticks PID...
  local total=0 pid
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}
postgres_pids() { local main; main=$(head -1 "$out/pg/postmaster.pid"); echo "$main" $(pgrep -P "$main"); }
hz=$(getconf CLK_TCK)
requests() { awk '/requests in/{print $1}' "$out/wrk.txt"; }
allocs() { # allocs: heap allocations so far, every instance's (each file is rewritten every 50 ms)
  local total=0 file
  for file in "$out"/allocs-*[0-9]; do total=$((total + $(cat "$file"))); done
  echo "$total"
}
per_post() { echo "scale=3; $1 * 1000 / $hz / $2" | bc -l | sed 's/^\./0./'; } # per_post TICKS REQUESTS: ms

setups=${SETUPS:-sqlite pg-on pg-off pg-unix three-on three-off}
wanted() { [[ " $setups " == *" $1 "* ]]; }

rows=()
declare -A post_rps cpu_total
measure() { # measure LABEL DURABILITY PORT [POSTGRESQL-URL]: the instances are "${pids[@]}"
  seed "$3"
  [ -z "${4:-}" ] || as_postgres psql "$4" -qc ANALYZE
  local own=("${pids[@]}") db=()
  [ -z "${4:-}" ] || db=($(postgres_pids))
  local before_own before_db before_allocs
  rm -f "$out"/allocs-* && sleep 0.2  # only this setup's instances, which rewrite theirs
  before_allocs=$(allocs)
  before_own=$(ticks "${own[@]}")
  before_db=$( ((${#db[@]})) && ticks "${db[@]}" || echo 0)
  load "http://127.0.0.1:$3/v1/receipts" "$here/post.lua"
  # Backends that came and went meanwhile are missed; the pools' connections stay for the run.
  [ -z "${4:-}" ] || db=($(postgres_pids))
  local spent_own spent_db n
  spent_own=$(($(ticks "${own[@]}") - before_own))
  sleep 0.2
  local allocs_per_post
  allocs_per_post=$(( ($(allocs) - before_allocs) / $(requests) ))
  spent_db=$(( ( ${#db[@]} ? $(ticks "${db[@]}") : 0 ) - before_db))
  n=$(requests)
  local post=("$(rps)" "$(field 99%)" "$(errors)")
  local cpu_own cpu_db cpu_all
  cpu_own=$(per_post "$spent_own" "$n")
  cpu_db=$( ((${#db[@]})) && per_post "$spent_db" "$n" || echo "")
  cpu_all=$(per_post "$((spent_own + spent_db))" "$n")
  load "http://127.0.0.1:$3/" "$out/get.lua"
  rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' "$1" "$2" "${post[0]}" "${post[1]}" \
    "$cpu_own" "$cpu_db" "$cpu_all" "$allocs_per_post" "$(rps)" "$(field 99%)" "$((post[2] + $(errors)))")")
  get_rps[${#rows[@]}]=$(rps)
  post_rps[$1]=${post[0]}
  cpu_total[$1]=$cpu_all
}
declare -A get_rps

# SQLite.
if wanted sqlite; then
  instance 18095
  measure "SQLite, 1 instance" "synchronous=NORMAL" 18095
  stop_all
fi

# PostgreSQL, one instance, its defaults, then commits not waiting for the disk.
for sync in on off; do
  wanted "pg-$sync" || continue
  as_postgres psql "$pg/postgres" -qc "CREATE DATABASE one_$sync" -c "ALTER DATABASE one_$sync SET synchronous_commit = $sync" >/dev/null
  instance 18095 RECEIPTD_DATABASE_URL="$pg/one_$sync" RECEIPTD_DATABASE_CONNECTIONS=4
  measure "PostgreSQL, 1 instance, synchronous_commit=$sync" "synchronous_commit=$sync" 18095 "$pg/one_$sync"
  stop_all
done
# The same over the server's Unix socket (libpq's host= a directory), as a database on the same
# machine as its one instance can be reached: no TCP on loopback for each round trip.
if wanted pg-unix; then
  as_postgres psql "$pg/postgres" -qc "CREATE DATABASE one_unix" -c "ALTER DATABASE one_unix SET synchronous_commit = off" >/dev/null
  instance 18095 RECEIPTD_DATABASE_URL="postgresql:///one_unix?host=$out&port=18320&user=postgres" RECEIPTD_DATABASE_CONNECTIONS=4
  measure "PostgreSQL, 1 instance, Unix socket, synchronous_commit=off" "synchronous_commit=off" 18095 "$pg/one_unix"
  stop_all
fi

# PostgreSQL, three instances behind HAProxy.
cat >"$out/haproxy.cfg" <<CFG
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend bench
    bind 127.0.0.1:18300
    default_backend receiptd
backend receiptd
    balance roundrobin
    option httpchk GET /readyz
    server r1 127.0.0.1:18301 check
    server r2 127.0.0.1:18302 check
    server r3 127.0.0.1:18303 check
CFG
for sync in on off; do
  wanted "three-$sync" || continue
  as_postgres psql "$pg/postgres" -qc "CREATE DATABASE three_$sync" -c "ALTER DATABASE three_$sync SET synchronous_commit = $sync" >/dev/null
  for port in 18301 18302 18303; do
    instance "$port" RECEIPTD_DATABASE_URL="$pg/three_$sync" RECEIPTD_DATABASE_CONNECTIONS=3
  done
  haproxy -f "$out/haproxy.cfg" >/dev/null 2>"$out/haproxy.log" &
  pids+=($!)
  for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18300/readyz && break; sleep 0.1; done
  measure "PostgreSQL, 3 instances + HAProxy, synchronous_commit=$sync" "synchronous_commit=$sync" 18300 "$pg/three_$sync"
  stop_all
done

# The peer: Hummingbird's one-row GET (random users), same connections.
wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$bench/wrk/random-user.lua" \
  http://127.0.0.1:18081/v1/entitlements/user-000001 >"$out/wrk.txt"
peer=$(rps)

echo "$(nproc) cores; ${secs} s per run; 64 connections; Apple answering at once"
echo "CPU: ms of CPU time per POST answered, receiptd (and HAProxy), PostgreSQL (postmaster, backends, writers)"
echo "allocs: receiptd's heap allocations per POST answered (every instance's; Benchmarks/alloc_count.c)"
echo "| setup | durability | POST req/s | POST p99 | CPU receiptd | CPU PostgreSQL | CPU all | allocs | GET req/s | GET p99 | errors |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "| Hummingbird one-row GET (peer) | | | | | | | | $peer | $(field 99%) | $(errors) |"
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
sqlite="SQLite, 1 instance"
for sync in on off; do
  one="PostgreSQL, 1 instance, synchronous_commit=$sync"
  three="PostgreSQL, 3 instances + HAProxy, synchronous_commit=$sync"
  [ -n "${post_rps[$one]:-}" ] && [ -n "${post_rps[$sqlite]:-}" ] || continue
  scaled=n/a
  [ -z "${post_rps[$three]:-}" ] || scaled=$(ratio "${post_rps[$three]}" "${post_rps[$one]}")
  echo "synchronous_commit=$sync: POST, 1 instance / SQLite $(ratio "${post_rps[$one]}" "${post_rps[$sqlite]}");" \
    "CPU per POST, 1 instance / SQLite $(ratio "${cpu_total[$one]}" "${cpu_total[$sqlite]}");" \
    "POST, 3 instances / 1 $scaled"
done
for i in "${!get_rps[@]}"; do
  printf 'GET of setup %d / peer: %.2f\n' "$i" "$(echo "${get_rps[$i]} / $peer" | bc -l)"
done | sort
