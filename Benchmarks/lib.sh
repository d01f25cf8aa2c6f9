# Sourced by the benchmarks: the shared set-up and the readers of wrk's output.
#   source "$(dirname "$0")/lib.sh"   # sets here, root, bench, secs (from $1, default 10), out;
#                                     # cleans up jobs, peers and $out on exit
#   BENCH_DATA=DIR: $out is DIR, kept after the run but for a PostgreSQL cluster (a benchmark
#   may reuse what an earlier run left there, saying so); else a temporary directory
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bench=${BENCH_DIR:-$root/../shared/bench}
secs=${1:-10}
if [ -n "${BENCH_DATA:-}" ]; then
  out=$(mkdir -p "$BENCH_DATA" && cd "$BENCH_DATA" && pwd)
else
  out=$(mktemp -d)
fi
# On exit: $out removed; or, kept, its PostgreSQL cluster (each run starts its own) alone.
leave() { if [ -n "${BENCH_DATA:-}" ]; then rm -rf "$out/pg"; else rm -rf "$out"; fi; }
trap 'kill $(jobs -p) 2>/dev/null || true; "$bench/stop-peers.sh" >/dev/null 2>&1 || true; leave' EXIT
ulimit -n 20000

# How the benchmarks run receiptd: production settings, the database in $out, `receiptd simulate`
# on :18096 as Apple, the test CA as Apple's root, the bench keys, no rate limits.
#   env "${receiptd_env[@]}" "$bin/receiptd" serve --config-dir "$root/Config"
receiptd_env=(
  RECEIPTD_ENVIRONMENT=production RECEIPTD_HTTP_PORT=18095 RECEIPTD_LOG_LEVEL=warning RECEIPTD_HTTP_ACCESS_LOG=false
  RECEIPTD_DATABASE_PATH="$out/bench.sqlite" RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY="$root/Migrations"
  RECEIPTD_API_OPENAPI_FILE="$root/openapi.yaml" RECEIPTD_HTTP_IDLE_TIMEOUT_MS=600000
  RECEIPTD_APP_STORE_ALLOW_HTTP=true RECEIPTD_APP_STORE_PRODUCTION_URL=http://127.0.0.1:18096/production/verifyReceipt
  RECEIPTD_APP_STORE_SANDBOX_URL=http://127.0.0.1:18096/sandbox/verifyReceipt
  RECEIPTD_APP_STORE_ROOT_CERTIFICATES="$root/Sources/ReceiptTesting/Fixtures/SignedData/testCA.der"
  RECEIPTD_API_PUBLIC_KEYS=bench-public RECEIPTD_API_SECRET_KEYS=bench-secret
  RECEIPTD_LIMITS_RECEIPTS_PER_KEY_PER_SECOND=0 RECEIPTD_LIMITS_RECEIPTS_PER_ADDRESS_PER_SECOND=0
)

postgres_cluster() { # postgres_cluster PORT: a PostgreSQL cluster of its own in $out/pg on 127.0.0.1:PORT
  # (and a Unix socket in $out), its defaults but for those, stopped on exit; sets pgbin, pg (its
  # URL, as the superuser postgres, trusted) and as_postgres (a command as the user postgres when root).
  pgbin=/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin
  as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
  chmod 777 "$out"
  as_postgres "$pgbin/initdb" -D "$out/pg" -A trust -U postgres -E UTF8 --locale=C >/dev/null
  as_postgres "$pgbin/pg_ctl" -D "$out/pg" -l "$out/pg.log" -w \
    -o "-p $1 -k $out -c listen_addresses=127.0.0.1 -c max_connections=100" start >/dev/null
  trap 'kill $(jobs -p) 2>/dev/null || true; as_postgres "$pgbin/pg_ctl" -D "$out/pg" -m immediate -w stop >/dev/null 2>&1 || true;
    "$bench/stop-peers.sh" >/dev/null 2>&1 || true; leave' EXIT
  pg=postgresql://postgres@127.0.0.1:$1
}

simulator() { # simulator BIN_DIR: `receiptd simulate` on :18096 as Apple (a background job), once it answers
  "$1/receiptd" simulate --port 18096 >"$out/simulator.log" 2>&1 &
  for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done
}
rss() { awk '/^Rss:/{print int($2/1024)}' "/proc/$1/smaps_rollup"; }  # MB resident: rss PID
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # clock ticks (1/100 s) of CPU: cpu PID
rollups_pending() { # changes not in the chart rollups yet, as a chart on :18095 says ("rebuilding" while they are)
  curl -s -H "Authorization: Bearer bench-secret" \
    "http://127.0.0.1:18095/v1/admin/charts/trials?from=$(date -u -d '30 days ago' +%Y-%m-%d)" |
    python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["pending_changes"] if a["source"] == "rollups" else "rebuilding")'
}

caught_up() { # waits (up to five minutes) until the rollups on :18095 hold every change
  local n=0
  while [ "$(rollups_pending)" != 0 ] && [ $n -lt 1200 ]; do sleep 0.25; n=$((n + 1)); done
}

# hold_connections PID PORT: opens 10,000 idle keep-alive connections to PORT, then sets conn_rss
# (PID's MB meanwhile) and served (how a GET /healthz fared meanwhile: "200 in 0.000361s").
hold_connections() {
  python3 "$here/hold_connections.py" "$out" "$2" &
  local held=$!
  for _ in $(seq 600); do [ -f "$out/ready" ] && break; sleep 0.1; done
  conn_rss=$(rss "$1")
  served=$(curl -s -o /dev/null -w '%{http_code} in %{time_total}s' "http://127.0.0.1:$2/healthz")
  kill $held 2>/dev/null || true
}

# Readers of the last wrk run, saved in $out/wrk.txt.
field() { awk -v k="$1" '$1==k{print $2}' "$out/wrk.txt"; }  # a latency percentile: field 99%
rps() { awk '/Requests\/sec/{printf "%d", $2}' "$out/wrk.txt"; }
errors() { # non-2xx answers plus socket errors
  local non2xx sock
  non2xx=$(awk '/Non-2xx/{print $NF}' "$out/wrk.txt")
  sock=$(awk '/Socket errors/{gsub(",", ""); print $4+$6+$8+$10}' "$out/wrk.txt")
  echo $(( ${non2xx:-0} + ${sock:-0} ))
}
ms() { # wrk latency (e.g. 301.52ms, 1.02s, 900.00us) in ms
  echo "$1" | awk '/us$/{sub("us","");print $1/1000;next} /ms$/{sub("ms","");print $1;next} /s$/{sub("s","");print $1*1000}'
}
