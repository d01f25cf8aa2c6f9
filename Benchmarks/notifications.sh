#!/usr/bin/env bash
# Benchmarks POST /v1/notifications/apple on loopback, with App Store Server
# Notifications V2 signed by Apple's test leaf key (Benchmarks/sign_notifications.py):
#   new notifications: each verified (three JWS: the notification, its transaction, its renewal
#     info, chained to the configured root), stored durably (synchronous=FULL) and its facts written;
#   duplicates: one notification delivered again and again (verified, found, nothing written);
#   next to the Hummingbird peer's POST /echo (4 KB JSON decoded and encoded) in the same run, for scale.
# Needs: apt-get install -y nginx wrk libsqlite3-dev libcurl4-openssl-dev; pip install cryptography
# Usage: Benchmarks/notifications.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
count=$((secs * 3000))
echo "signing $count notifications…" >&2
python3 "$here/sign_notifications.py" "$count" "$out/bodies.txt"
"$bench/start-peers.sh" >&2

cd "$out"
RECEIPTD_ENVIRONMENT=production RECEIPTD_HTTP_PORT=18097 RECEIPTD_LOG_LEVEL=warning RECEIPTD_HTTP_ACCESS_LOG=false \
  RECEIPTD_DATABASE_PATH="$out/bench.sqlite" RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY="$root/Migrations" \
  RECEIPTD_APP_STORE_ROOT_CERTIFICATES="$root/Sources/ReceiptTesting/Fixtures/SignedData/testCA.der" \
  RECEIPTD_API_SECRET_KEYS=bench-secret "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:18097/readyz && break; sleep 0.1; done

head -1 "$out/bodies.txt" >"$out/one.txt"
cat >"$out/duplicate.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = io.open("$out/one.txt"):read("*l")
LUA

export BODIES="$out/bodies.txt"  # read by notifications.lua
run() { wrk -t2 -c"$1" -d"${secs}s" --latency --timeout 10s -s "$3" "$2" >"$out/wrk.txt"; }

printf '\n| test | conns | server | req/s | errors | p50 | p99 |\n|---|---|---|---|---|---|---|\n'
for conns in 16 64; do
  run "$conns" http://127.0.0.1:18097/v1/notifications/apple "$here/notifications.lua"
  printf '| POST /v1/notifications/apple, new | %s | receiptd | %s | %s | %s | %s |\n' \
    "$conns" "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
done
stored=$(sqlite3 "$out/bench.sqlite" 'SELECT count(*) FROM notifications' 2>/dev/null || echo '?')
run 64 http://127.0.0.1:18097/v1/notifications/apple "$out/duplicate.lua"
printf '| POST /v1/notifications/apple, duplicate | 64 | receiptd | %s | %s | %s | %s |\n' \
  "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
run 64 http://127.0.0.1:18081/echo "$bench/wrk/echo.lua"
printf '| POST /echo 4 KB | 64 | Hummingbird | %s | %s | %s | %s |\n' "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
echo
echo "notifications stored: $stored (bodies signed: $count; a run longer than the bodies repeats them as duplicates)"
