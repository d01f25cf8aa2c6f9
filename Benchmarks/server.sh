#!/usr/bin/env bash
# Benchmarks receiptd's HTTP server alone against the peers in ../shared/bench, in one run, on loopback.
#   GET /healthz      receiptd            vs nginx (static JSON) and Hummingbird (one SQLite row + JSON)
#   POST /echo 4 KB   http-inspect bench-json (our stack) vs Hummingbird's /echo (same decode + encode work)
# at 1 and 64 connections; prints req/s, p50/p99, the ratio to each peer, and receiptd's RSS
# (idle, and under 10,000 idle keep-alive connections).
# Needs: apt-get install -y nginx wrk bc libsqlite3-dev libcurl4-openssl-dev
# Usage: Benchmarks/server.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh" receiptd http-inspect)
"$bench/start-peers.sh" >&2

cd "$out"
RECEIPTD_HTTP_PORT=18090 RECEIPTD_LOG_LEVEL=warning RECEIPTD_DATABASE_PATH="$out/bench.sqlite" \
  RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY="$root/Migrations" RECEIPTD_HTTP_IDLE_TIMEOUT_MS=600000 \
  "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
rpid=$!
PORT=18092 "$bin/http-inspect" bench-json >"$out/echo.log" 2>&1 &
for u in http://127.0.0.1:18090/readyz http://127.0.0.1:18092/healthz; do
  for _ in $(seq 100); do curl -sf -o /dev/null "$u" && break; sleep 0.1; done
done
idle_rss=$(rss $rpid)

# run NAME CONNS URL [LUA] -> "rps p50 p99"
run() {
  local conns=$2 url=$3 lua=${4:-} threads=2
  [ "$conns" = 1 ] && threads=1
  local args=(-t"$threads" -c"$conns" -d"${secs}s" --latency)
  [ -n "$lua" ] && args+=(-s "$lua")
  wrk "${args[@]}" "$url" >"$out/wrk.txt"
  local rps p50 p99
  rps=$(rps)
  p50=$(field 50%)
  p99=$(field 99%)
  echo "$rps $p50 $p99"
}

printf '\n| test | conns | server | req/s | p50 | p99 | ratio |\n|---|---|---|---|---|---|---|\n'
for c in 1 64; do
  read -r r_rps r50 r99 < <(run receiptd $c http://127.0.0.1:18090/healthz)
  read -r n_rps n50 n99 < <(run nginx $c http://127.0.0.1:18080/)
  read -r h_rps h50 h99 < <(run hb $c "http://127.0.0.1:18081/v1/entitlements/user-000001" "$bench/wrk/random-user.lua")
  printf '| GET /healthz | %s | receiptd | %s | %s | %s | %.2f× nginx, %.2f× Hummingbird |\n' $c "$r_rps" "$r50" "$r99" \
    "$(echo "$r_rps / $n_rps" | bc -l)" "$(echo "$r_rps / $h_rps" | bc -l)"
  printf '| GET static / one row | %s | nginx | %s | %s | %s | |\n' $c "$n_rps" "$n50" "$n99"
  printf '| GET one row | %s | Hummingbird | %s | %s | %s | |\n' $c "$h_rps" "$h50" "$h99"
done
for c in 1 64; do
  read -r e_rps e50 e99 < <(run echo $c http://127.0.0.1:18092/echo "$bench/wrk/echo.lua")
  read -r h_rps h50 h99 < <(run hb $c http://127.0.0.1:18081/echo "$bench/wrk/echo.lua")
  printf '| POST /echo 4 KB JSON | %s | http-inspect bench-json (ours) | %s | %s | %s | %.2f× Hummingbird |\n' $c "$e_rps" "$e50" "$e99" \
    "$(echo "$e_rps / $h_rps" | bc -l)"
  printf '| POST /echo 4 KB JSON | %s | Hummingbird | %s | %s | %s | |\n' $c "$h_rps" "$h50" "$h99"
done
load_rss=$(rss $rpid)

# 10,000 idle keep-alive connections, then a request must still be served.
hold_connections $rpid 18090
hb_pid=$(pgrep -f HBPeer | head -1)
printf '\n| receiptd RSS | MB |\n|---|---|\n| idle | %s |\n| after the runs above | %s |\n| holding 10,000 keep-alive connections | %s |\n' \
  "$idle_rss" "$load_rss" "$conn_rss"
printf '| Hummingbird peer now | %s |\n' "$(rss "$hb_pid")"
printf '\nwith 10,000 idle connections open, GET /healthz answered: %s\n' "$served"
