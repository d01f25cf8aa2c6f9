#!/usr/bin/env bash
# Benchmarks receiptd's receipts API on loopback:
#   POST /v1/receipts against `receiptd simulate --latency-ms 300` at 2,000 connections, spread over
#     10,000 users and 14 scripted scenarios: req/s, errors (must be 0) and the p50 latency receiptd
#     adds to Apple's 300 ms;
#   GET /v1/subscribers/{id} at 64 connections next to the Hummingbird peer's one-row GET;
#   then `receiptd rederive` on the database just filled, while receiptd still serves: it must
#     report 0 changed (derivation is deterministic).
# The rate limits are off here: every request comes from one address and one key.
# Needs: apt-get install -y nginx wrk bc libsqlite3-dev libcurl4-openssl-dev
# Usage: Benchmarks/receipts.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
"$bench/start-peers.sh" >&2

cd "$out"
"$bin/receiptd" simulate --port 18096 --latency-ms 300 >"$out/simulator.log" 2>&1 &
RECEIPTD_ENVIRONMENT=production RECEIPTD_HTTP_PORT=18095 RECEIPTD_LOG_LEVEL=warning RECEIPTD_HTTP_ACCESS_LOG=false \
  RECEIPTD_DATABASE_PATH="$out/bench.sqlite" RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY="$root/Migrations" \
  RECEIPTD_APP_STORE_ALLOW_HTTP=true RECEIPTD_APP_STORE_PRODUCTION_URL=http://127.0.0.1:18096/production/verifyReceipt \
  RECEIPTD_APP_STORE_SANDBOX_URL=http://127.0.0.1:18096/sandbox/verifyReceipt \
  RECEIPTD_API_PUBLIC_KEYS=bench-public RECEIPTD_API_SECRET_KEYS=bench-secret \
  RECEIPTD_LIMITS_RECEIPTS_PER_KEY_PER_SECOND=0 RECEIPTD_LIMITS_RECEIPTS_PER_ADDRESS_PER_SECOND=0 \
  "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.1; done

receipt=$(printf 'active_monthly:bench' | base64)
body="{\"app_user_id\":\"bench\",\"receipt_data\":\"$receipt\"}"
seed=$(curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:18095/v1/receipts \
  -H 'Authorization: Bearer bench-public' -H 'Content-Type: application/json' -d "$body")
[ "$seed" = 200 ] || { echo "seeding POST answered $seed" >&2; cat "$out/receiptd.log" >&2; exit 1; }


# run CONNS URL [LUA] [HEADER] -> wrk output in $out/wrk.txt
run() {
  local args=(-t2 -c"$1" -d"${secs}s" --latency --timeout 10s)
  [ -n "${3:-}" ] && args+=(-s "$3")
  [ -n "${4:-}" ] && args+=(-H "$4")
  wrk "${args[@]}" "$2" >"$out/wrk.txt"
}

printf '\n| test | conns | server | req/s | errors | p50 | p99 | note |\n|---|---|---|---|---|---|---|---|\n'
run 2000 http://127.0.0.1:18095/v1/receipts "$here/post.lua"
p50=$(field 50%)
added=$(echo "$(ms "$p50") - 300" | bc -l)
printf '| POST /v1/receipts (Apple +300 ms) | 2000 | receiptd | %s | %s | %s | %s | p50 added latency %.1f ms |\n' \
  "$(rps)" "$(errors)" "$p50" "$(field 99%)" "$added"

# Let receiptd finish the verifications still queued when wrk stopped, so the GET run starts idle.
for _ in $(seq 60); do
  [ "$(ss -Htn state established '( sport = :18095 )' | wc -l)" -eq 0 ] && break
  sleep 0.5
done
sleep 1
run 64 http://127.0.0.1:18095/v1/subscribers/bench "" "Authorization: Bearer bench-secret"
r_rps=$(rps); r_err=$(errors); r50=$(field 50%); r99=$(field 99%)
run 64 "http://127.0.0.1:18081/v1/entitlements/user-000001" "$bench/wrk/random-user.lua"
h_rps=$(rps); h_err=$(errors); h50=$(field 50%); h99=$(field 99%)
printf '| GET /v1/subscribers/{id} | 64 | receiptd | %s | %s | %s | %s | %.2f× Hummingbird |\n' \
  "$r_rps" "$r_err" "$r50" "$r99" "$(echo "$r_rps / $h_rps" | bc -l)"
printf '| GET one row | 64 | Hummingbird | %s | %s | %s | %s | |\n' "$h_rps" "$h_err" "$h50" "$h99"
echo
echo "rederive while serving (must report 0 changed):"
RECEIPTD_ENVIRONMENT=production RECEIPTD_DATABASE_PATH="$out/bench.sqlite" \
  RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY="$root/Migrations" RECEIPTD_API_SECRET_KEYS=bench-secret \
  "$bin/receiptd" rederive --config-dir "$root/Config" | tail -3
echo "verification log rows: $(sqlite3 "$out/bench.sqlite" 'SELECT count(*) FROM verifications' 2>/dev/null || echo '?')"
