#!/usr/bin/env bash
# Two builds' chart answers side by side on data Benchmarks/analytics.sh kept (BENCH_DATA, its
# rollups built): each build started in turn ROUNDS times, every path answered once to warm and
# then three times, printed as "A|B path seconds bytes" lines and then per build and path the
# median of the times and the bytes. Paths default to the cohort tables by day, whole (two years)
# and by country (a year).
# Usage: BENCH_DATA=DIR Benchmarks/charts-ab.sh BIN_DIR_A BIN_DIR_B [ROUNDS, default 3] [PATH ...]
source "$(dirname "$0")/lib.sh" 0
[ -n "${BENCH_DATA:-}" ] && [ -f "$out/built" ] || { echo "BENCH_DATA must name data with its rollups built" >&2; exit 2; }
a=$1 b=$2 rounds=${3:-3}
shift 3 || shift $#
from=$(date -u -d '730 days ago' +%Y-%m-%d)
day=$(date -u -d '365 days ago' +%Y-%m-%d)
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(
  "/v1/admin/charts/cohorts?from=$from&resolution=day" "/v1/admin/charts/subscription_retention?from=$from&resolution=day"
  "/v1/admin/charts/cohorts?from=$day&resolution=day&group_by=country"
  "/v1/admin/charts/subscription_retention?from=$day&resolution=day&group_by=country")
get() { curl -s -o /dev/null -w "$1" -H "Authorization: Bearer bench-secret" "http://127.0.0.1:18095$2"; }
for _ in $(seq "$rounds"); do
  for tag in A B; do
    bin=$a && [ $tag = B ] && bin=$b
    env "${receiptd_env[@]}" RECEIPTD_REFRESHER_ENABLED=false "$bin/receiptd" serve --config-dir "$root/Config" \
      >>"$out/receiptd.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.1; done
    for p in "${paths[@]}"; do get "" "$p"; done
    for p in "${paths[@]}"; do
      for _ in 1 2 3; do get "$tag ${p#/v1/admin/charts/} %{time_total} %{size_download}\n" "$p"; done
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
done | tee "$out/charts-ab.txt"
echo
sort -k2,2 -k1,1 -k3,3n "$out/charts-ab.txt" | awk '
  { k = $1 " " $2; n[k]++; t[k, n[k]] = $3; s[k] = $4; order[k] = NR }
  END { for (k in n) printf "%s: median %.1f ms, %d bytes\n", k, t[k, int((n[k] + 1) / 2)] * 1000, s[k] }' | sort -k2,2 -k1,1
