#!/usr/bin/env bash
# What an erasure (DELETE /v1/subscribers/{id}) costs, on SQLite, release build, loopback:
#   1. 2,000 subscribers stored (one active subscription each: transactions, renewal history,
#      events, verification log, change log rows);
#   2. 100 erasures one after another on an idle service: each DELETE's time (the erasure's
#      transaction with secure_delete, then the TRUNCATE checkpoint of the WAL), and the file sizes;
#   3. POST /v1/receipts at 64 connections for the run's seconds, every request a new user (so each
#      writes), alone, then again with erasures running one after another beside it: the POST rate
#      both times, and the DELETEs' times under load.
# Needs: apt-get install -y wrk bc curl sqlite3 libsqlite3-dev libcurl4-openssl-dev
# Usage: Benchmarks/erasure.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
cd "$out"
simulator "$bin"
env "${receiptd_env[@]}" "$bin/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
for _ in $(seq 200); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.05; done

seq 2000 | xargs -P 50 -I{} sh -c '
  receipt=$(printf "active_monthly:e{}" | base64 -w0)
  code=$(curl -s -o /dev/null -w "%{http_code}" -X POST http://127.0.0.1:18095/v1/receipts \
    -H "Authorization: Bearer bench-public" -d "{\"app_user_id\":\"e{}\",\"receipt_data\":\"$receipt\"}")
  [ "$code" = 200 ] || { echo "seeding e{} answered $code" >&2; exit 255; }'

erase() { # erase FIRST LAST OUTFILE: DELETE e<FIRST>…e<LAST> one after another, each one's seconds
  for n in $(seq "$1" "$2"); do
    curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X DELETE "http://127.0.0.1:18095/v1/subscribers/e$n" \
      -H "Authorization: Bearer bench-secret"
  done >"$3"
}
summary() { # summary FILE: "n ok, median … ms, p99 … ms, max … ms"
  awk '$1==200{print $2*1000}' "$1" | sort -n | awk '{a[NR]=$1} END {
    p = int(NR * 0.99); if (p < 1) p = 1
    printf "%d erased, median %.1f ms, p99 %.1f ms, max %.1f ms", NR, a[int(NR/2)+1], a[p], a[NR] }'
}
size() { stat -c %s "$out/bench.sqlite" "$out/bench.sqlite-wal" 2>/dev/null | awk '{s+=$1} END {printf "%.1f MB", s/1048576}'; }

before=$(size)
erase 1 100 "$out/idle.txt"
idle=$(summary "$out/idle.txt")
after=$(size)

UNIQUE_USERS=alone wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$here/post.lua" \
  http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
alone=$(rps); alone_p99=$(field 99%); alone_errors=$(errors)
erase 101 2000 "$out/loaded.txt" &
eraser=$!
UNIQUE_USERS=beside wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$here/post.lua" \
  http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
kill $eraser 2>/dev/null || true
wait $eraser 2>/dev/null || true
beside=$(rps); beside_p99=$(field 99%); beside_errors=$(errors)
loaded=$(summary "$out/loaded.txt")
failed=$(awk '$1!=200' "$out/idle.txt" "$out/loaded.txt" | wc -l)

echo "erasures on an idle service: $idle (database and WAL $before before, $after after)"
echo "POST /v1/receipts alone:            $alone req/s, p99 $alone_p99, errors $alone_errors"
echo "POST beside erasures:               $beside req/s, p99 $beside_p99, errors $beside_errors ($(echo "$beside / $alone" | bc -l | cut -c1-4) of alone)"
echo "erasures beside the POSTs:          $loaded"
echo "erasures answered other than 200:   $failed"
