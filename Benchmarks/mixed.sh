#!/usr/bin/env bash
# Reads beside a write storm, on loopback, next to the Hummingbird peer in the same run:
#   1. POST /v1/receipts at 2,000 connections against `receiptd simulate --latency-ms 300`, over
#      10,000 users and 14 scripted scenarios (nearly every POST writes a new subscriber), and at
#      the same time GET /v1/subscribers/{id} at 64 connections over 1,000 users stored before;
#   2. the same GETs alone, document cache on (the default);
#   3. the same GETs alone after a restart with `database.documentCache: 0` (every GET reads storage);
#   4. Hummingbird's one-row GET (random users) at 64 connections, for the ratios;
#   then `receiptd rederive` on the database just filled: it must report 0 changed.
# receiptd runs with the shipped defaults (Config/), production settings, rate limits off (every
# request comes from one address and one key).
# Needs: apt-get install -y nginx wrk bc libsqlite3-dev libcurl4-openssl-dev
# Usage: Benchmarks/mixed.sh [seconds per run, default 10]
#   RECEIPTD_BIN=DIR: the receiptd in DIR instead of this checkout's release build (to compare two).
source "$(dirname "$0")/lib.sh"

bin=${RECEIPTD_BIN:-$("$root/Scripts/release-bin.sh")}
"$bench/start-peers.sh" >&2
cd "$out"
"$bin/receiptd" simulate --port 18096 --latency-ms 300 >"$out/simulator.log" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done

start() { # start [ENV=VALUE ...]: receiptd on :18095 with the bench settings, until ready
  env "${receiptd_env[@]}" "$@" "$bin/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
  rpid=$!
  for _ in $(seq 200); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && return; sleep 0.05; done
  echo "receiptd did not start" >&2
  cat "$out/receiptd.log" >&2
  exit 1
}
start

# 1,000 users to read: g1…g1000, each with an active subscription.
seq 1000 | xargs -P 100 -I{} sh -c '
  receipt=$(printf "active_monthly:g{}" | base64 -w0)
  code=$(curl -s -o /dev/null -w "%{http_code}" -X POST http://127.0.0.1:18095/v1/receipts \
    -H "Authorization: Bearer bench-public" -d "{\"app_user_id\":\"g{}\",\"receipt_data\":\"$receipt\"}")
  [ "$code" = 200 ] || { echo "seeding g{} answered $code" >&2; exit 255; }'
cat >"$out/get.lua" <<'LUA'
wrk.headers["Authorization"] = "Bearer bench-secret"
function request() return wrk.format("GET", "/v1/subscribers/g" .. math.random(1000)) end
LUA

# wrk CONNS URL LUA OUTFILE [THREADS]
load() { wrk -t"${5:-2}" -c"$1" -d"${secs}s" --latency --timeout 10s -s "$3" "$2" >"$4"; }
# Readers of a saved wrk output (lib.sh's read $out/wrk.txt).
use() { cp "$1" "$out/wrk.txt"; }
drain() { # until receiptd has finished what wrk left in flight (a verification goes on when its
  # client has gone): no connection open, and the verification log still for a second
  local before=-1 now
  for _ in $(seq 120); do
    now=$(sqlite3 "$out/bench.sqlite" 'SELECT count(*) FROM verifications')
    [ "$(ss -Htn state established '( sport = :18095 )' | wc -l)" -eq 0 ] && [ "$now" = "$before" ] && break
    before=$now
    sleep 1
  done
}
ratio() { echo "$1 / $2" | bc -l; }
rows=()
row() { rows+=("$(printf "$@")"); }

# 1. The storm and the reads at once (one wrk thread each: four threads on two cores already).
load 2000 http://127.0.0.1:18095/v1/receipts "$here/post.lua" "$out/post.txt" 1 &
storm=$!
sleep 1  # the GETs start once the storm has filled its 2,000 connections
secs_all=$secs
secs=$((secs - 2))
load 64 http://127.0.0.1:18095/ "$out/get.lua" "$out/get-storm.txt" 1
secs=$secs_all
wait $storm
use "$out/post.txt"
post_rps=$(rps)
added=$(echo "$(ms "$(field 50%)") - 300" | bc -l)
row '| POST /v1/receipts (Apple +300 ms), new users | 2000 | receiptd | %s | %s | %s | %s | p50 adds %.1f ms to Apple'"'"'s 300 |' \
  "$post_rps" "$(errors)" "$(field 50%)" "$(field 99%)" "$added"
use "$out/get-storm.txt"
storm_rps=$(rps); storm_row=("$(errors)" "$(field 50%)" "$(field 99%)")
drain

# 2–4. Reads alone: cached, Hummingbird, then uncached after a restart.
load 64 http://127.0.0.1:18095/ "$out/get.lua" "$out/get-cached.txt"
load 64 "http://127.0.0.1:18081/v1/entitlements/user-000001" "$bench/wrk/random-user.lua" "$out/hb.txt"
use "$out/hb.txt"
hb_rps=$(rps); hb_row=("$(errors)" "$(field 50%)" "$(field 99%)")
row '| GET /v1/subscribers/{id} **during the POST storm** | 64 | receiptd | %s | %s | %s | %s | **%.2f× Hummingbird** |' \
  "$storm_rps" "${storm_row[@]}" "$(ratio "$storm_rps" "$hb_rps")"
use "$out/get-cached.txt"
row '| GET /v1/subscribers/{id} alone, document cache on | 64 | receiptd | %s | %s | %s | %s | **%.2f× Hummingbird** |' \
  "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)" "$(ratio "$(rps)" "$hb_rps")"
kill "$rpid"
wait "$rpid" 2>/dev/null || true
start RECEIPTD_DATABASE_DOCUMENT_CACHE=0
load 64 http://127.0.0.1:18095/ "$out/get.lua" "$out/get-uncached.txt"
use "$out/get-uncached.txt"
row '| GET /v1/subscribers/{id} alone, `documentCache: 0` | 64 | receiptd | %s | %s | %s | %s | **%.2f× Hummingbird** |' \
  "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)" "$(ratio "$(rps)" "$hb_rps")"
row '| GET one SQLite row + JSON, random users | 64 | Hummingbird | %s | %s | %s | %s | |' "$hb_rps" "${hb_row[@]}"

printf '\n| test | conns | server | req/s | errors | p50 | p99 | note |\n|---|---|---|---|---|---|---|---|\n'
printf '%s\n' "${rows[@]}"
printf '\n`Benchmarks/mixed.sh %s`, %s, %s cores.\n\n' "$secs" "$(date -u +%Y-%m-%d)" "$(nproc)"
echo "rederive while serving (must report 0 changed):"
env "${receiptd_env[@]}" "$bin/receiptd" rederive --config-dir "$root/Config" | tail -1
