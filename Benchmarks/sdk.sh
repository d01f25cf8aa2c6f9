#!/usr/bin/env bash
# The SDK listener's most frequent call beside receiptd's own, in one run, on loopback:
#   GET /v1/subscribers/{id} on the RevenueCat SDK listener (an `appl_` key: CustomerInfo) and on
#   receiptd's own API (the secret key: the subscriber document), over the users a short POST
#   storm stored (14 scripted scenarios), at random; each at 64 and 1 connections, alternated, after
#   a warm-up pass that fills both caches; then POST /v1/receipts on both (the simulator answering
#   at once, every request a user never seen before, 64 connections): the same verification, the
#   SDK's answer being CustomerInfo. The goal (issue 60): the SDK's answers at ≥ 0.9× the own
#   API's requests per second.
# Needs: apt-get install -y wrk bc libsqlite3-dev libcurl4-openssl-dev
# Usage: Benchmarks/sdk.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
cd "$out"
"$bin/receiptd" simulate --port 18096 --latency-ms 0 >"$out/simulator.log" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done
env "${receiptd_env[@]}" RECEIPTD_REVENUE_CAT_PORT=18097 RECEIPTD_REVENUE_CAT_KEYS=appl_bench \
  "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
for _ in $(seq 200); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.05; done

wrk -t2 -c64 -d3s -s "$here/post.lua" http://127.0.0.1:18095/v1/receipts >/dev/null
sleep 1
python3 - "$out/bench.sqlite" "$out/users.txt" <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT app_user_id FROM subscribers").fetchall()
open(sys.argv[2], "w").write("\n".join(r[0] for r in rows) + "\n")
PY
users=$(wc -l <"$out/users.txt")
for which in own sdk; do
  key=$([ $which = own ] && echo bench-secret || echo appl_bench)
  cat >"$out/$which.lua" <<LUA
local users = {}
for line in io.lines("$out/users.txt") do users[#users + 1] = line end
wrk.headers["Authorization"] = "Bearer $key"
function request() return wrk.format("GET", "/v1/subscribers/" .. users[math.random(#users)]) end
LUA
done
url() { [ "$1" = own ] && echo http://127.0.0.1:18095/ || echo http://127.0.0.1:18097/; }
run() { # run WHICH CONNS [SECONDS] -> wrk's output in $out/wrk.txt
  local threads=2
  [ "$2" = 1 ] && threads=1
  wrk -t"$threads" -c"$2" -d"${3:-$secs}s" --latency -s "$out/$1.lua" "$(url "$1")" >"$out/wrk.txt"
}
run own 64 3; run sdk 64 3  # warm-up: both caches filled
echo "| GET /v1/subscribers/{id}, $users users at random | conns | req/s | errors | p50 | p99 |"
echo "|---|---|---|---|---|---|"
for c in 64 1; do
  run own "$c"; o=$(rps); printf '| own API (document) | %s | %s | %s | %s | %s |\n' "$c" "$o" "$(errors)" "$(field 50%)" "$(field 99%)"
  run sdk "$c"; s=$(rps); printf '| SDK listener (CustomerInfo) | %s | %s | %s | %s | %s |\n' "$c" "$s" "$(errors)" "$(field 50%)" "$(field 99%)"
  printf '| **SDK / own at %s** | | %.2f× | | | |\n' "$c" "$(echo "$s / $o" | bc -l)"
done
echo
echo "| POST /v1/receipts, a new user each, Apple at once | conns | req/s | errors | p50 | p99 |"
echo "|---|---|---|---|---|---|"
UNIQUE_USERS=own wrk -t2 -c64 -d"${secs}s" --latency -s "$here/post.lua" http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
o=$(rps); printf '| own API (document) | 64 | %s | %s | %s | %s |\n' "$o" "$(errors)" "$(field 50%)" "$(field 99%)"
sleep 2
UNIQUE_USERS=sdk SDK_KEY=appl_bench wrk -t2 -c64 -d"${secs}s" --latency -s "$here/post.lua" http://127.0.0.1:18097/v1/receipts >"$out/wrk.txt"
s=$(rps); printf '| SDK listener (CustomerInfo) | 64 | %s | %s | %s | %s |\n' "$s" "$(errors)" "$(field 50%)" "$(field 99%)"
printf '| **SDK / own** | | %.2f× | | | |\n' "$(echo "$s / $o" | bc -l)"
echo
echo "\`Benchmarks/sdk.sh $secs\`, $(date -u +%F), $(nproc) cores."
