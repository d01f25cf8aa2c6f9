#!/usr/bin/env bash
# What the subscription charts cost (Docs/analytics.md), on SQLite, release build, loopback:
#   1. SUBSCRIBERS customers (default 1,000,000; about ten transactions each) over the two years
#      before now, written straight into a migrated database (Benchmarks/analytics_data.py);
#   2. `receiptd build-rollups`: the rollups built from nothing, its time and the files' sizes (on
#      SQLite the rollups have a file of their own, bench-rollups.sqlite);
#   3. each chart for the two years at day resolution (the cohort tables by month and by day, MRR
#      split by store and by country by month), every chart split by country for the last year by
#      day (and MRR by product, revenue's CSV), RUNS times one after
#      another, from the rollups: the median and the slowest answer (curl's total time), or
#      "timed out" past TIMEOUT seconds; then drill-downs, RUNS times: the first page (50
#      contributions and the figure) and the second of one day's gross revenue and of MRR at the
#      end of a day, and one day's gross revenue as CSV (every contribution) once;
#   4. POST /v1/receipts at 64 connections for the run's seconds, every request a new user, on
#      that database, PAIRS times (default 3) in turn: without the rollup keeper
#      (analytics.keepRollups=false), then with it (once it has taken in the run before); each
#      run's rate, CPU per POST of receiptd and of PostgreSQL's processes (the keeper's share is
#      the difference), the ratio of all runs with to all runs without, and how long the keeper
#      took to include a run's last POST. The refresher is off in these runs (its sweep of every
#      purchase when the process starts would land in one run and not the other), and PostgreSQL
#      writes its dirty pages (CHECKPOINT) before each run, so that no run pays for another's;
#   5. the same rows loaded into a throwaway PostgreSQL cluster (COPY), and 2. to 4. again on it;
#      with PG_ROLLUPS=copy, 2. is not run on PostgreSQL: the rollups SQLite built (the same rows
#      for the same data and settings) are copied in beside the data, as a restore would bring
#      them, so that a million subscribers' charts are measured without PostgreSQL's build (hours).
# BENCH_DATA=DIR keeps the generated database and its rollups in DIR, and a later run with the
# same SUBSCRIBERS reuses them (1. and the SQLite build are skipped, and say so): a kept
# database also holds the POSTs of the runs before.
# Needs: apt-get install -y wrk curl python3 postgresql libsqlite3-dev libpq-dev libcurl4-openssl-dev zlib1g-dev
# Usage: [SUBSCRIBERS=N] [RUNS=5] [TIMEOUT=600] [PAIRS=3] [SQLITE_ONLY=1 | POSTGRESQL_ONLY=1] Benchmarks/analytics.sh [seconds of POSTs, default 10]
#   (POSTGRESQL_ONLY still writes the SQLite file it loads from, but measures nothing on it)
source "$(dirname "$0")/lib.sh"
subscribers=${SUBSCRIBERS:-1000000}
runs=${RUNS:-5}
pairs=${PAIRS:-3}
timeout=${TIMEOUT:-600}

bin=$("$root/Scripts/release-bin.sh")
cd "$out"
if [ "$(cat "$out/generated" 2>/dev/null)" = "$subscribers" ]; then
  echo "reusing the $subscribers subscribers generated in $out; database $(du -sh "$out/bench.sqlite" | cut -f1)"
else
  rm -f "$out"/bench*.sqlite* "$out/generated" "$out/built"
  env "${receiptd_env[@]}" "$bin/receiptd" migrate --config-dir "$root/Config" >/dev/null
  started=$(date +%s)
  python3 "$here/analytics_data.py" "$out/bench.sqlite" "$subscribers"
  echo "$subscribers" >"$out/generated"
  echo "generated in $(( $(date +%s) - started )) s; database $(du -sh "$out/bench.sqlite" | cut -f1)"
fi

simulator "$bin"

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
next_cursor() { # next_cursor PATH: the drill-down page's next_cursor
  curl -s -H "Authorization: Bearer bench-secret" "http://127.0.0.1:18095$1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["next_cursor"] or "")'
}
server_cpu() { # clock ticks of PostgreSQL's processes (0 on SQLite)
  [ -f "$out/pg/postmaster.pid" ] || { echo 0; return; }
  local pm ticks=0 p
  pm=$(head -1 "$out/pg/postmaster.pid")
  for p in "$pm" $(pgrep -P "$pm"); do ticks=$(( ticks + $(cpu "$p" 2>/dev/null || echo 0) )); done
  echo "$ticks"
}
settle() { # PostgreSQL writes its dirty pages now rather than in the next run
  [ -f "$out/pg/postmaster.pid" ] && psql -q "$pg/receiptd" -c CHECKPOINT || true
}
serve() { # serve [ENV=VALUE ...]: receiptd in the background until ready; sets pid
  env "${receiptd_env[@]}" "$@" "$bin/receiptd" serve --config-dir "$root/Config" >>"$out/receiptd.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.1; done
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; }
posts() { # posts TAG: the POST load; sets rate, posts_done and the ms of CPU per POST of receiptd (per_post) and PostgreSQL (server_per_post)
  local before server_before
  settle
  before=$(cpu "$pid")
  server_before=$(server_cpu)
  UNIQUE_USERS="analytics-$1" wrk -t2 -c64 -d"${secs}s" --latency --timeout 10s -s "$here/post.lua" \
    http://127.0.0.1:18095/v1/receipts >"$out/wrk.txt"
  rate=$(rps)
  posts_done=$(awk '/requests in/{print $1}' "$out/wrk.txt")
  per_post=$(echo "scale=3; ($(cpu "$pid") - before) * 10 / $posts_done" | bc)
  server_per_post=$(echo "scale=3; ($(server_cpu) - server_before) * 10 / $posts_done" | bc)
  echo "  $1: $rate req/s, p99 $(field 99%), errors $(errors); CPU per POST: receiptd $per_post ms, PostgreSQL $server_per_post ms"
}
measure() { # measure NAME [ENV=VALUE ...]: the rollups built, every chart, then POSTs without and with the keeper
  local name=$1 started size
  shift
  echo "--- $name"
  # SQLite's files only when measuring SQLite (POSTGRESQL_ONLY still writes the file it loads from).
  size=$( [ "$name" = SQLite ] && [ -f "$out/bench.sqlite" ] && du -sm "$out/bench.sqlite" | cut -f1 || echo "")
  if [ "$name" = SQLite ] && [ -f "$out/built" ]; then
    echo "rollups kept from an earlier run: $(cat "$out/built"); the rollups file $(du -sm "$out/bench-rollups.sqlite" | cut -f1) MB"
  elif [ "$name" = PostgreSQL ] && [ "${PG_ROLLUPS:-}" = copy ]; then
    echo "rollups copied from SQLite's build"
  else
    started=$(date +%s.%N)
    env "${receiptd_env[@]}" "$@" "$bin/receiptd" build-rollups --config-dir "$root/Config" >"$out/build.json"
    printf 'rollups built in %.0f s: %s' "$(echo "$(date +%s.%N) - $started" | bc)" "$(cat "$out/build.json")"
    [ -n "$size" ] && printf '; SQLite file %s MB -> %s MB, and the rollups file %s MB' "$size" \
      "$(du -sm "$out/bench.sqlite" | cut -f1)" "$(du -sm "$out/bench-rollups.sqlite" | cut -f1)"
    echo
    [ "$name" = SQLite ] && printf 'in %.0f s, %s\n' "$(echo "$(date +%s.%N) - $started" | bc)" "$(cat "$out/build.json")" >"$out/built"
  fi
  serve "$@"
  for chart in revenue mrr actives trials trial_conversion churn refund_rate mrr_movement actives_movement \
    trials_movement new_customers initial_conversion conversion_to_paying new_paid_subscriptions \
    non_subscription_purchases ltv_per_customer ltv_per_paying_customer subscription_status refund_requests; do
    printf '%-26s %s\n' "$chart" "$(timed "/v1/admin/charts/$chart?from=$from&resolution=day")"
  done
  for chart in cohorts subscription_retention; do
    printf '%-26s %s\n' "$chart (month)" "$(timed "/v1/admin/charts/$chart?from=$from&resolution=month")"
    printf '%-26s %s\n' "$chart (day)" "$(timed "/v1/admin/charts/$chart?from=$from&resolution=day")"
  done
  # Split: by store from the unsplit rollups; by country (every chart, the last year by day) and by
  # product from the split ones.
  printf '%-26s %s\n' "mrr by store" "$(timed "/v1/admin/charts/mrr?from=$from&resolution=month&group_by=store")"
  printf '%-26s %s\n' "mrr by country (month)" "$(timed "/v1/admin/charts/mrr?from=$from&resolution=month&group_by=country")"
  for chart in revenue mrr actives trials trial_conversion churn refund_rate mrr_movement actives_movement \
    trials_movement new_customers initial_conversion conversion_to_paying new_paid_subscriptions \
    non_subscription_purchases ltv_per_customer ltv_per_paying_customer subscription_status refund_requests \
    cohorts subscription_retention; do
    printf '%-26s %s\n' "$chart by country" "$(timed "/v1/admin/charts/$chart?from=$day&resolution=day&group_by=country")"
  done
  printf '%-26s %s\n' "cohorts by country (month)" \
    "$(timed "/v1/admin/charts/cohorts?from=$day&resolution=month&group_by=country")"
  printf '%-26s %s\n' "mrr by product" "$(timed "/v1/admin/charts/mrr?from=$day&resolution=day&group_by=product")"
  printf '%-26s %s\n' "revenue by country, CSV" \
    "$(timed "/v1/admin/charts/revenue?from=$day&resolution=day&group_by=country&format=csv")"
  local drill
  for drill in "revenue&measure=gross" "mrr&measure=mrr" "mrr&measure=mrr&group_by=country&group=DEU"; do
    local path="/v1/admin/charts/${drill%%&*}/drill?from=$from&resolution=day&period=$day&${drill#*&}"
    local label="drill ${drill%%&*}"
    case $drill in *group=*) label="$label in ${drill##*group=}" ;; esac
    printf '%-18s %s\n' "$label" "$(timed "$path")"
    printf '%-18s %s\n' "  its next page" "$(timed "$path&cursor=$(next_cursor "$path")")"
  done
  printf '%-18s %s\n' "drill CSV" "$(runs=1 timed "/v1/admin/charts/revenue/drill?from=$from&resolution=day&period=$day&measure=gross&format=csv")"
  echo "receiptd resident after the charts: $(rss "$pid") MB; charts from: $(rollups_pending) changes pending"
  stop
  echo "POST /v1/receipts beside $subscribers subscribers, $pairs pairs of runs:"
  local pair without=0 with=0 caught ratios=()
  for pair in $(seq "$pairs"); do
    serve "$@" RECEIPTD_REFRESHER_ENABLED=false RECEIPTD_ANALYTICS_KEEP_ROLLUPS=false
    posts "$name-without-$pair"
    local one_without=$rate
    without=$(( without + rate ))
    stop
    serve "$@" RECEIPTD_REFRESHER_ENABLED=false
    # First the keeper takes in the POSTs of the run without it, so that the load meets it idle.
    caught=0
    while [ "$(rollups_pending)" != 0 ] && [ "$caught" -lt 600 ]; do sleep 1; caught=$((caught + 1)); done
    posts "$name-with-$pair"
    with=$(( with + rate ))
    ratios+=("$(( 100 * rate / one_without )) %")
    caught=0
    while [ "$(rollups_pending)" != 0 ] && [ "$caught" -lt 600 ]; do sleep 1; caught=$((caught + 1)); done
    echo "    the keeper included the last POST ${caught} s after the load ended"
    stop
  done
  echo "  with rollups at $(( 100 * with / without )) % of without (pair by pair: ${ratios[*]})"
}

[ -z "${POSTGRESQL_ONLY:-}" ] && measure SQLite
[ -n "${SQLITE_ONLY:-}" ] && exit 0

postgres_cluster 18321
psql "$pg/postgres" -qc "CREATE DATABASE receiptd"
started=$(date +%s)
# The generated rows, table by table, through COPY (receiptd copy-data checks every row and moves
# a few thousand a second: most of an hour for a million subscribers).
env "${receiptd_env[@]}" RECEIPTD_DATABASE_URL="$pg/receiptd" "$bin/receiptd" migrate --config-dir "$root/Config" >/dev/null
for spec in \
  "subscribers:app_user_id, created_at, updated_at" \
  "ownership:original_transaction_id, app_user_id, since" \
  "transactions:transaction_id, original_transaction_id, product_id, bundle_id, environment, purchase_date, original_purchase_date, expires_date, cancellation_date, is_trial_period, is_in_intro_offer_period, is_upgraded, ownership_type, subscription_group_id, raw_json, first_seen_at, updated_at, stated_at, price, currency, price_source, storefront, offer_type, offer_discount_type, transaction_reason, revocation_type" \
  "pending_renewal_info:original_transaction_id, product_id, auto_renew_product_id, auto_renew_status, environment, raw_json, updated_at" \
  "exchange_rates:day, currency, per_euro"; do
  table=${spec%%:*}
  columns=${spec#*:}
  sqlite3 -csv "$out/bench.sqlite" "SELECT $columns FROM $table" \
    | psql -q "$pg/receiptd" -c "\\copy $table ($columns) FROM STDIN WITH (FORMAT csv)"
done
if [ "${PG_ROLLUPS:-}" = copy ]; then
  # The rollups' tables as SQLite keeps them (their own file), and their state: built, for the
  # same settings and rates (the fingerprint).
  [ -f "$out/built" ] || { echo "PG_ROLLUPS=copy needs the rollups SQLite built (run without POSTGRESQL_ONLY, or reuse BENCH_DATA)"; exit 1; }
  for table in rollup_days rollup_splits rollup_holders rollup_marks rollup_moments; do
    columns=$(sqlite3 "$out/bench-rollups.sqlite" "SELECT group_concat(name, ', ') FROM pragma_table_info('$table')")
    sqlite3 -csv "$out/bench-rollups.sqlite" "SELECT $columns FROM $table" \
      | psql -q "$pg/receiptd" -c "\\copy $table ($columns) FROM STDIN WITH (FORMAT csv)"
  done
  IFS='|' read -r fingerprint phase < <(sqlite3 "$out/bench-rollups.sqlite" \
    "SELECT fingerprint, phase FROM rollup_state WHERE id = 1")
  [ "$phase" = ready ] || { echo "SQLite's rollups are not built ($phase)"; exit 1; }
  # They hold every row loaded (the SQLite keeper took in its change log); PostgreSQL's is empty.
  psql -q "$pg/receiptd" -v fingerprint="$fingerprint" <<'SQL'
UPDATE rollup_state SET fingerprint = :'fingerprint', phase = 'ready', rebuild_after = NULL,
  changes_through = (SELECT coalesce(max(sequence), 0) FROM changes) WHERE id = 1;
SQL
fi
psql -q "$pg/receiptd" -c "ANALYZE"
echo "loaded into PostgreSQL in $(( $(date +%s) - started )) s"
measure PostgreSQL RECEIPTD_DATABASE_URL="$pg/receiptd"
