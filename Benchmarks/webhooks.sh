#!/usr/bin/env bash
# Webhooks under load (Docs/performance.md, "Webhooks"): POST /v1/receipts with every request a new
# user (so every answer stores events; with webhooks on, a delivery per event in the same
# transaction), against `receiptd simulate` without latency, 64 connections, a fresh database per
# run; webhooks off and on in turn, twice, in one run. With webhooks on, one endpoint points at
# `receiptd webhook-sink` on loopback, which checks every signature:
#   POST req/s, p50, p99     the outbox must not halve it (on / off, same run)
#   events                   events stored by the run (= deliveries, one endpoint)
#   delivered during load    verified requests the sink acknowledged while wrk was posting
#   drain                    seconds from wrk's end until /readyz shows no pending delivery
#   delivered/s              events / (load + drain): the sustained delivery rate
# Hummingbird's POST /echo (4 KB JSON) is measured in the same run, for scale. Sender, receiver,
# simulator and wrk share the two cores.
# Needs: apt-get install -y nginx wrk sqlite3 libsqlite3-dev libcurl4-openssl-dev
# Usage: Benchmarks/webhooks.sh [seconds per run, default 10]
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
"$bench/start-peers.sh" >&2
cd "$out"
"$bin/receiptd" simulate --port 18096 >"$out/simulator.log" 2>&1 &
secret=bench-webhook-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$bin/receiptd" webhook-sink --port 18098 --secret "$secret" >"$out/sink.jsonl" 2>"$out/sink.log" &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done
webhooks_on=(
  RECEIPTD_WEBHOOKS_ENDPOINTS=bench RECEIPTD_WEBHOOKS_ALLOW_HTTP=true
  RECEIPTD_WEBHOOKS_BENCH_URL=http://127.0.0.1:18098/hooks RECEIPTD_WEBHOOKS_BENCH_SECRET="$secret"
)
pending() { # the bench endpoint's pending deliveries, from /readyz
  curl -s http://127.0.0.1:18095/readyz | python3 -c 'import json,sys; print(json.load(sys.stdin)["webhooks"]["bench"]["pending"])'
}
sink_count() { # the sink's requests that match: sink_count 'python condition on a line a'
  python3 -c "import json,sys; print(sum(1 for l in open(sys.argv[1]) if (lambda a: $1)(json.loads(l))))" "$out/sink.jsonl"
}
acknowledged() { sink_count 'a["answered"] == 204'; }  # verified (the sink answers 401 otherwise)
now() { date +%s.%N; }

printf '\n| run | webhooks | POST req/s | errors | p50 | p99 | events | delivered during load | drain | delivered/s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
declare -A total_rps=([off]=0 [on]=0)
for round in 1 2; do
  for mode in off on; do
    db="$out/$mode-$round.sqlite"
    extra=()
    [ "$mode" = on ] && extra=("${webhooks_on[@]}")
    env "${receiptd_env[@]}" RECEIPTD_DATABASE_PATH="$db" "${extra[@]}" "$bin/receiptd" serve --config-dir "$root/Config" \
      >"$out/receiptd-$mode-$round.log" 2>&1 &
    rpid=$!
    until curl -sf -o /dev/null http://127.0.0.1:18095/readyz; do sleep 0.05; done
    before=$(acknowledged)
    UNIQUE_USERS="$mode$round" wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$here/post.lua" \
      http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
    ended=$(now)
    during=$(( $(acknowledged) - before ))
    drain=- per_second=-
    if [ "$mode" = on ]; then
      for _ in $(seq 1200); do [ "$(pending)" = 0 ] && break; sleep 0.1; done
      drain=$(printf '%.1f s' "$(echo "$(now) - $ended" | bc -l)")
    fi
    kill -TERM $rpid && wait $rpid || true
    events=$(sqlite3 "$db" 'SELECT count(*) FROM events')
    if [ "$mode" = on ]; then
      delivered=$(( $(acknowledged) - before ))
      [ "$delivered" -lt "$events" ] && echo "only $delivered of $events events were delivered" >&2
      per_second=$(printf '%.0f' "$(echo "$delivered / ($secs + ${drain% s})" | bc -l)")
    else
      during=-
    fi
    total_rps[$mode]=$(( ${total_rps[$mode]} + $(rps) ))
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$mode" "$(rps)" "$(errors)" \
      "$(field 50%)" "$(field 99%)" "$events" "$during" "$drain" "$per_second"
  done
done
wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$bench/wrk/echo.lua" http://127.0.0.1:18081/echo >"$out/wrk.txt"
printf '| for scale | Hummingbird POST /echo 4 KB | %s | %s | %s | %s | | | | |\n' "$(rps)" "$(errors)" "$(field 50%)" "$(field 99%)"
echo
printf 'POST throughput, webhooks on / off (both rounds): %.2f\n' "$(echo "${total_rps[on]} / ${total_rps[off]}" | bc -l)"
bad=$(sink_count 'a["signature"] != "valid" or a["schema_problems"]')
echo "sink: $(wc -l <"$out/sink.jsonl") requests, $bad with a bad signature or schema"
