#!/usr/bin/env bash
# Verification through the App Store Server API next to verifyReceipt, in one run, against
# `receiptd simulate --latency-ms 300` (both APIs of the simulator, 300 ms added to every answer).
# The same purchases (made in the simulator first) are posted as a transaction id (Get Transaction
# History + Get All Subscription Statuses, asked concurrently, every signed payload verified) and as
# their PKCS#7 app receipt (verifyReceipt), each by users of their own, at 8 connections (under
# Apple's published 50 requests a second per endpoint, which receiptd's rate limiter keeps to) and
# at 64 (over it: the limiter makes calls wait their turn). Prints req/s, errors, p50, p99.
# Needs: apt-get install -y wrk openssl curl; the release build.
# Usage: Benchmarks/server-api.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$out/key.p8"
key_env=(
  RECEIPTD_APP_STORE_SERVER_API_PRIVATE_KEY_FILE="$out/key.p8" RECEIPTD_APP_STORE_SERVER_API_KEY_ID=BENCH00001
  RECEIPTD_APP_STORE_SERVER_API_ISSUER_ID=00000000-0000-4000-8000-00000000beef
)
cd "$out"
env "${key_env[@]}" "$bin/receiptd" simulate --port 18096 --latency-ms 300 >"$out/simulator.log" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done
env "${receiptd_env[@]}" "${key_env[@]}" RECEIPTD_APP_STORE_APP_APPLE_IDS=1234567890 \
  RECEIPTD_APP_STORE_SERVER_API_PRODUCTION_URL=http://127.0.0.1:18096/serverapi/production \
  RECEIPTD_APP_STORE_SERVER_API_SANDBOX_URL=http://127.0.0.1:18096/serverapi/sandbox \
  RECEIPTD_REFRESHER_ENABLED=false RECEIPTD_APP_STORE_NOTIFICATION_HISTORY_ENABLED=false \
  "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
until curl -sf -o /dev/null http://127.0.0.1:18095/readyz; do sleep 0.05; done

# 1,000 purchases over six scenarios, known to both of the simulator's APIs.
scenarios=(active_monthly trial upgraded grace_period cancelled non_consumable)
for i in $(seq 1000); do
  printf '{"scenario":"%s","tag":"b%d"}\n' "${scenarios[$((i % 6))]}" "$i"
done | while read -r body; do
  curl -s -X POST http://127.0.0.1:18096/control/purchase -d "$body" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["transaction_id"], d["receipt_data"])'
done >"$out/purchases.txt"

# One probe of each, so a broken set-up fails here and not as a table of errors.
read -r tid receipt < "$out/purchases.txt"
for body in "{\"app_user_id\":\"probe1\",\"transaction_id\":\"$tid\"}" "{\"app_user_id\":\"probe2\",\"receipt_data\":\"$receipt\"}"; do
  code=$(curl -s -o "$out/probe.json" -w '%{http_code}' -X POST http://127.0.0.1:18095/v1/receipts \
    -H 'Authorization: Bearer bench-public' -d "$body")
  [ "$code" = 200 ] || { echo "probe failed ($code): $(cat "$out/probe.json")" >&2; tail -5 "$out/receiptd.log" >&2; exit 1; }
done

printf '| verifier | conns | req/s | errors | p50 | p99 |\n|---|---|---|---|---|---|\n'
for conns in 8 64; do
  for body in transaction_id receipt_data; do
    PURCHASES="$out/purchases.txt" BODY=$body wrk -t2 -c"$conns" -d"${secs}s" --latency --timeout 20s \
      -s "$here/server-api.lua" http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
    name=$([ "$body" = transaction_id ] && echo "Server API (transaction_id)" || echo "verifyReceipt (receipt_data)")
    printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$conns" "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
    sleep 1
  done
done
echo
echo "App Store Server API calls by outcome (appstore_server_api_calls_total):"
curl -s -H 'Authorization: Bearer bench-secret' http://127.0.0.1:18095/metrics |
  awk -F'[{}]' '/^appstore_server_api_calls_total/{split($2, l, ","); for (i in l) if (l[i] ~ /^outcome=/) o=l[i]; n[o]+=$3} END{for (o in n) printf "  %s %d\n", o, n[o]}'
