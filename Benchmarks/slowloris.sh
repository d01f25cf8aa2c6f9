#!/usr/bin/env bash
# Hostile HTTP: normal clients' latency while 1,000 slowloris connections drip their
# heads, receiptd beside nginx (../shared/bench peers) under the same attack. wrk -t2 -c16 on
# GET /healthz (no I/O) and GET /v1/subscribers/{id} (SQLite), first quiet, then under attack.
# Target: receiptd's p99 under attack <= 10 ms.
# Needs: apt-get install -y nginx wrk python3
# Usage: Benchmarks/slowloris.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
"$bench/start-peers.sh" >&2

cd "$out"
RECEIPTD_ENVIRONMENT=production RECEIPTD_HTTP_PORT=18395 RECEIPTD_LOG_LEVEL=warning RECEIPTD_HTTP_ACCESS_LOG=false \
  RECEIPTD_DATABASE_PATH="$out/bench.sqlite" RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY="$root/Migrations" \
  RECEIPTD_APP_STORE_SIMULATOR=true RECEIPTD_APP_STORE_ALLOW_HTTP=true \
  RECEIPTD_API_PUBLIC_KEYS=bench-public RECEIPTD_API_SECRET_KEYS=bench-secret \
  "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18395/readyz && break; sleep 0.1; done
receipt=$(printf 'active_monthly:slow' | base64)
curl -sf -o /dev/null -X POST http://127.0.0.1:18395/v1/receipts -H 'Authorization: Bearer bench-public' \
  -H 'Content-Type: application/json' -d "{\"app_user_id\":\"slow\",\"receipt_data\":\"$receipt\"}"

run() { wrk -t2 -c16 -d"${secs}s" --latency "$@" >"$out/wrk.txt"; }
row() { printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$(rps)" "$(field 50%)" "$(field 99%)" "$(errors)"; }

printf '\n| server | route | slowloris | req/s | p50 | p99 | errors |\n|---|---|---|---|---|---|---|\n'
measure() { # attack label
  run http://127.0.0.1:18395/healthz; row receiptd "GET /healthz" "$1"
  run -H 'Authorization: Bearer bench-secret' http://127.0.0.1:18395/v1/subscribers/slow
  row receiptd "GET /v1/subscribers/{id}" "$1"
  run http://127.0.0.1:18080/; row nginx "GET / (static)" "$1"
}
measure none
python3 "$here/slowloris.py" 18395 1000 $((secs * 3 + 10)) >"$out/slow-receiptd.txt" &
python3 "$here/slowloris.py" 18080 1000 $((secs * 3 + 10)) >"$out/slow-nginx.txt" &
sleep 3
measure "1,000 each"
wait $(jobs -p | tail -2) 2>/dev/null || true
echo
echo "receiptd: $(cat "$out/slow-receiptd.txt")"
echo "nginx:    $(cat "$out/slow-nginx.txt")"
