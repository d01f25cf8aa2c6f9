#!/usr/bin/env bash
# What the subscription charts cost (Docs/analytics.md), on SQLite, release build, loopback:
#   1. SUBSCRIBERS customers (default 1,000,000; about ten transactions each) over the two years
#      before now, written straight into a migrated database (Benchmarks/analytics_data.py);
#   2. each chart for the two years at day resolution (cohorts: by month), RUNS times one after
#      another: the median and the slowest answer (curl's total time), or "timed out" past
#      TIMEOUT seconds; then a drill-down into one day's gross revenue;
#   3. POST /v1/receipts at 64 connections for the run's seconds, every request a new user, on
#      that database: the rate, to set beside the same run once charts come from rollups;
#   4. the same rows loaded into a throwaway PostgreSQL cluster (COPY), and
#      2. and 3. again on it.
# Needs: apt-get install -y wrk curl python3 postgresql libsqlite3-dev libpq-dev libcurl4-openssl-dev zlib1g-dev
# Usage: [SUBSCRIBERS=N] [RUNS=5] [TIMEOUT=600] [SQLITE_ONLY=1] Benchmarks/analytics.sh [seconds of POSTs, default 10]
source "$(dirname "$0")/lib.sh"
subscribers=${SUBSCRIBERS:-1000000}
runs=${RUNS:-5}
timeout=${TIMEOUT:-600}

bin=$("$root/Scripts/release-bin.sh")
cd "$out"
env "${receiptd_env[@]}" "$bin/receiptd" migrate --config-dir "$root/Config" >/dev/null
started=$(date +%s)
python3 "$here/analytics_data.py" "$out/bench.sqlite" "$subscribers"
echo "generated in $(( $(date +%s) - started )) s; database $(du -sh "$out/bench.sqlite" | cut -f1)"

"$bin/receiptd" simulate --port 18096 >"$out/simulator.log" 2>&1 &
for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:18096/ && break; sleep 0.05; done

from=$(date -u -d '730 days ago' +%Y-%m-%d)
day=$(date -u -d '365 days ago' +%Y-%m-%d)
timed() { # timed PATH: RUNS GETs one after another; prints "median X ms, max Y ms" or why not
  local times=() status t
  for _ in $(seq "$runs"); do
    read -r status t < <(curl -s -o /dev/null -m "$timeout" -w '%{http_code} %{time_total}\n' \
      -H "Authorization: Bearer bench-secret" "http://127.0.0.1:18095$1" || echo "000 0")
    if [ "$status" != 200 ]; then echo "answered $status (timed out past ${timeout} s or failed)"; return; fi
    times+=("$(echo "$t" | awk '{printf "%.1f", $1 * 1000}')")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "median %s ms, max %s ms", a[int((NR+1)/2)], a[NR]}'
}
measure() { # measure NAME [ENV=VALUE ...]: receiptd on the database the settings name, every chart, then POSTs
  local name=$1
  shift
  env "${receiptd_env[@]}" "$@" "$bin/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.1; done
  echo "--- $name"
  for chart in revenue mrr actives trials trial_conversion churn refund_rate; do
    printf '%-18s %s\n' "$chart" "$(timed "/v1/admin/charts/$chart?from=$from&resolution=day")"
  done
  printf '%-18s %s\n' "cohorts (month)" "$(timed "/v1/admin/charts/cohorts?from=$from&resolution=month")"
  printf '%-18s %s\n' "drill (a day)" "$(timed "/v1/admin/charts/revenue/drill?from=$from&resolution=day&period=$day&measure=gross")"
  echo "receiptd resident after the charts: $(rss "$pid") MB"
  UNIQUE_USERS="analytics-$name" wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$here/post.lua" \
    http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
  echo "POST /v1/receipts beside $subscribers subscribers: $(rps) req/s, p99 $(field 99%), errors $(errors)"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

measure SQLite
[ -n "${SQLITE_ONLY:-}" ] && exit 0

pgbin=/usr/lib/postgresql/$(ls /usr/lib/postgresql | sort -n | tail -1)/bin
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
chmod 777 "$out"
as_postgres "$pgbin/initdb" -D "$out/pg" -A trust -U postgres -E UTF8 --locale=C >/dev/null
as_postgres "$pgbin/pg_ctl" -D "$out/pg" -l "$out/pg.log" -w \
  -o "-p 18321 -k $out -c listen_addresses=127.0.0.1 -c max_connections=100" start >/dev/null
trap 'kill $(jobs -p) 2>/dev/null || true; as_postgres "$pgbin/pg_ctl" -D "$out/pg" -m immediate -w stop >/dev/null 2>&1 || true;
  rm -rf "$out"' EXIT
pg=postgresql://postgres@127.0.0.1:18321
psql "$pg/postgres" -qc "CREATE DATABASE receiptd"
started=$(date +%s)
# The generated rows, table by table, through COPY (receiptd copy-data checks every row and moves
# a few thousand a second: most of an hour for a million subscribers).
env "${receiptd_env[@]}" RECEIPTD_DATABASE_URL="$pg/receiptd" "$bin/receiptd" migrate --config-dir "$root/Config" >/dev/null
for spec in \
  "subscribers:app_user_id, created_at, updated_at" \
  "ownership:original_transaction_id, app_user_id, since" \
  "transactions:transaction_id, original_transaction_id, product_id, bundle_id, environment, purchase_date, original_purchase_date, expires_date, cancellation_date, is_trial_period, is_in_intro_offer_period, is_upgraded, ownership_type, subscription_group_id, raw_json, first_seen_at, updated_at, stated_at, price, currency, price_source, storefront, offer_type, offer_discount_type, transaction_reason, revocation_type" \
  "pending_renewal_info:original_transaction_id, product_id, auto_renew_product_id, auto_renew_status, environment, raw_json, updated_at"; do
  table=${spec%%:*}
  columns=${spec#*:}
  sqlite3 -csv "$out/bench.sqlite" "SELECT $columns FROM $table" \
    | psql -q "$pg/receiptd" -c "\\copy $table ($columns) FROM STDIN WITH (FORMAT csv)"
done
psql -q "$pg/receiptd" -c "ANALYZE"
echo "loaded into PostgreSQL in $(( $(date +%s) - started )) s"
measure PostgreSQL RECEIPTD_DATABASE_URL="$pg/receiptd"
