#!/usr/bin/env bash
# The benchmark table (Docs/performance.md): receiptd against the peers in ../shared/bench, in one
# run, on loopback, wrk sharing the two cores with the servers.
#   start-up to ready     fresh database, migrations applied, until GET /readyz answers 200
#   POST /v1/receipts     against `receiptd simulate --latency-ms 300`, 256 connections, 10,000
#                         users over 14 scenarios: req/s, errors, p50/p99, latency added to Apple's
#   GET /v1/subscribers   the users just stored, at random, at 1 and 64 connections, next to
#                         Hummingbird's one-row GET (random users) and nginx's static JSON
#   notifications         new App Store Server Notifications V2 (three JWS each, durable commit)
#   1,000-transaction     one receipt of 1,000 periods (scenario long_history), posted by 20 users
#   receipt ingest        in turn: receiptd's time (the answer's time less the simulator's 300 ms)
#   memory                RSS idle, after the runs, holding 10,000 keep-alive connections
# Needs: apt-get install -y nginx wrk bc libsqlite3-dev libcurl4-openssl-dev; pip install cryptography
# Usage: Benchmarks/run.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
echo "signing notifications…" >&2
python3 "$here/sign_notifications.py" $((secs * 2500)) "$out/bodies.txt"
"$bench/start-peers.sh" >&2
cd "$out"
"$bin/receiptd" simulate --port 18096 --latency-ms 300 >"$out/simulator.log" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done

# Start-up: from exec to the first 200 from /readyz, on a new database (all migrations run).
started=$(date +%s%N)
env "${receiptd_env[@]}" "$bin/receiptd" serve --config-dir "$root/Config" >"$out/receiptd.log" 2>&1 &
rpid=$!
until curl -sf -o /dev/null http://127.0.0.1:18095/readyz; do sleep 0.005; done
startup_ms=$(( ($(date +%s%N) - started) / 1000000 ))
sleep 2
idle_rss=$(rss $rpid)


# run CONNS URL [LUA] [HEADER] -> wrk's output in $out/wrk.txt
run() {
  local threads=2
  [ "$1" = 1 ] && threads=1
  local args=(-t"$threads" -c"$1" -d"${secs}s" --latency --timeout 10s)
  [ -n "${3:-}" ] && args+=(-s "$3")
  [ -n "${4:-}" ] && args+=(-H "$4")
  wrk "${args[@]}" "$2" >"$out/wrk.txt"
}
drain() { # until receiptd has answered what wrk left in flight
  for _ in $(seq 60); do
    [ "$(ss -Htn state established '( sport = :18095 )' | wc -l)" -eq 0 ] && break
    sleep 0.5
  done
  sleep 1
}
ratio() { echo "$1 / $2" | bc -l; }
rows=()
row() { rows+=("$(printf "$@")"); }

run 256 http://127.0.0.1:18095/v1/receipts "$here/post.lua"
added=$(echo "$(ms "$(field 50%)") - 300" | bc -l)
row '| POST /v1/receipts (simulator +300 ms) | 256 | receiptd | %s | %s | %s | %s | p50 adds %.1f ms to Apple'"'"'s 300 |' \
  "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)" "$added"
drain

# The users just stored, for GETs at random among them.
python3 - "$out/bench.sqlite" "$out/users.txt" <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT app_user_id FROM subscribers").fetchall()
open(sys.argv[2], "w").write("\n".join(r[0] for r in rows) + "\n")
PY
users=$(wc -l <"$out/users.txt")
cat >"$out/get.lua" <<LUA
local users = {}
for line in io.lines("$out/users.txt") do users[#users + 1] = line end
wrk.headers["Authorization"] = "Bearer bench-secret"
function request() return wrk.format("GET", "/v1/subscribers/" .. users[math.random(#users)]) end
LUA
for c in 64 1; do
  run $c http://127.0.0.1:18095/ "$out/get.lua"
  r_rps=$(rps); r_err=$(errors); r50=$(field 50%); r99=$(field 99%)
  run $c "http://127.0.0.1:18081/v1/entitlements/user-000001" "$bench/wrk/random-user.lua"
  h_rps=$(rps); h_err=$(errors); h50=$(field 50%); h99=$(field 99%)
  run $c http://127.0.0.1:18080/
  n_rps=$(rps); n_err=$(errors); n50=$(field 50%); n99=$(field 99%)
  row '| GET /v1/subscribers/{id}, %s users at random | %s | receiptd | %s | %s | %s | %s | **%.2f× Hummingbird**, %.2f× nginx |' \
    "$users" $c "$r_rps" "$r_err" "$r50" "$r99" "$(ratio "$r_rps" "$h_rps")" "$(ratio "$r_rps" "$n_rps")"
  row '| GET one SQLite row + JSON, random users | %s | Hummingbird | %s | %s | %s | %s | |' $c "$h_rps" "$h_err" "$h50" "$h99"
  row '| GET static JSON | %s | nginx | %s | %s | %s | %s | |' $c "$n_rps" "$n_err" "$n50" "$n99"
done

export BODIES="$out/bodies.txt"  # read by notifications.lua
run 64 http://127.0.0.1:18095/v1/notifications/apple "$here/notifications.lua"
row '| POST /v1/notifications/apple, new V2 (3 JWS, durable) | 64 | receiptd | %s | %s | %s | %s | |' \
  "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
run 64 http://127.0.0.1:18081/echo "$bench/wrk/echo.lua"
row '| POST /echo 4 KB JSON (for scale) | 64 | Hummingbird | %s | %s | %s | %s | |' \
  "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
drain

# 1,000-transaction receipts: 20 users each post one (new: 1,000 rows), then the first again (unchanged).
receipt=$(printf 'long_history:bench' | base64 -w0)
times=()
for i in $(seq 20); do
  t=$(curl -s -o "$out/long.json" -w '%{time_total}' -X POST http://127.0.0.1:18095/v1/receipts \
    -H 'Authorization: Bearer bench-public' -d "{\"app_user_id\":\"long$i\",\"receipt_data\":\"$receipt\"}")
  grep -q '"weekly"' "$out/long.json" || { echo "long_history post failed: $(head -c 300 "$out/long.json")" >&2; exit 1; }
  times+=("$(echo "$t * 1000 - 300" | bc -l)")
done
again=$(curl -s -o /dev/null -w '%{time_total}' -X POST http://127.0.0.1:18095/v1/receipts \
  -H 'Authorization: Bearer bench-public' -d "{\"app_user_id\":\"long20\",\"receipt_data\":\"$receipt\"}")
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
stored=$(python3 -c "import sqlite3,sys;print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM transactions WHERE product_id='weekly'\").fetchone()[0])" "$out/bench.sqlite")
row '| POST a 1,000-transaction receipt (new holder) | 1 | receiptd | | 0 | %.0f ms | | receiptd'"'"'s share (answer − 300 ms), median of 20; %s rows stored |' "$median" "$stored"
row '| the same receipt again (nothing new) | 1 | receiptd | | 0 | %.0f ms | | |' "$(echo "$again * 1000 - 300" | bc -l)"
load_rss=$(rss $rpid)

# 10,000 idle keep-alive connections, then a request must still be served.
hold_connections $rpid 18095
hb_rss=$(rss "$(pgrep -f HBPeer | head -1)")

printf '\n| test | conns | server | req/s | errors | p50 | p99 | note |\n|---|---|---|---|---|---|---|---|\n'
printf '%s\n' "${rows[@]}"
printf '\n| receiptd | value |\n|---|---|\n'
printf '| start-up to ready (new database, %s migrations) | %s ms |\n' "$(ls "$root"/Migrations/*.sql | wc -l)" "$startup_ms"
printf '| RSS idle | %s MB |\n| RSS after the runs above | %s MB |\n' "$idle_rss" "$load_rss"
printf '| RSS holding 10,000 keep-alive connections | %s MB (GET /healthz meanwhile: %s) |\n' "$conn_rss" "$served"
printf '| Hummingbird peer RSS now, for scale | %s MB |\n' "$hb_rss"
# The link order file (Benchmarks/order-file.sh) goes stale as code moves: how much of it still names code.
ordered=$(nm --defined-only "$bin/receiptd" | awk '{print $3}' | sort -u | comm -12 - <(sort -u "$root/Sources/receiptd/receiptd.order") | wc -l)
printf '| functions of receiptd.order in the binary | %s of %s |\n' "$ordered" "$(wc -l <"$root/Sources/receiptd/receiptd.order")"
printf '\n`Benchmarks/run.sh %s`, %s, %s cores.\n' "$secs" "$(date -u +%Y-%m-%d)" "$(nproc)"
