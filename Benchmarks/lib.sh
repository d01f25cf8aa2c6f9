# Sourced by the benchmarks: the shared set-up and the readers of wrk's output.
#   source "$(dirname "$0")/lib.sh"   # sets here, root, bench, secs (from $1, default 10), out;
#                                     # cleans up jobs, peers and $out on exit
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bench=${BENCH_DIR:-$root/../shared/bench}
secs=${1:-10}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; "$bench/stop-peers.sh" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
ulimit -n 20000

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
