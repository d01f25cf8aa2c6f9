#!/usr/bin/env bash
# Writes Sources/receiptd/receiptd.order, the functions receiptd runs, for lld's
# --symbol-ordering-file (Package.swift, release builds). The kernel maps executable text in
# 64 KB fault-around windows: the ~1 MB of code a start runs, left where the linker puts it, is
# spread over ~14 MB of text and keeps ~12 MB of it resident. Laid out together, start-up first,
# then what one pass of the API adds, it keeps ~6 MB resident (Docs/performance.md, RSS idle).
# A stale file costs only that memory: names it lists that the binary lacks are skipped, and
# Benchmarks/run.sh prints how many the binary still has. Run this again when that share falls.
# How: `receiptd serve` under valgrind's callgrind (on a copy without debug info, which valgrind
# cannot read), dumped once ready and idle for 2 s, then after a receipt through the simulator, the
# subscriber read twice, a V2 notification, /metrics and /openapi.yaml.
# Needs: apt-get install -y valgrind; pip install cryptography
# Usage: Benchmarks/order-file.sh
source "$(dirname "$0")/lib.sh"

bin=$("$root/Scripts/release-bin.sh")
strip -g -o "$out/receiptd" "$bin/receiptd"
python3 "$here/sign_notifications.py" 1 "$out/bodies.txt"
cd "$out"
simulator "$bin"

env "${receiptd_env[@]}" valgrind --tool=callgrind --dump-instr=no --demangle=no \
  --callgrind-out-file="$out/callgrind.out" "$out/receiptd" serve --config-dir "$root/Config" \
  >"$out/receiptd.log" 2>&1 &
vpid=$!
for _ in $(seq 600); do curl -sf -o /dev/null http://127.0.0.1:18095/readyz && break; sleep 0.2; done
sleep 2
callgrind_control --dump=start-up "$vpid" >/dev/null 2>&1

api() { curl -sf -o /dev/null "$@" || { echo "failed: curl $*" >&2; exit 1; }; }
receipt=$(printf 'active_monthly:order' | base64 -w0)
api -X POST http://127.0.0.1:18095/v1/receipts -H 'Authorization: Bearer bench-public' \
  -d "{\"app_user_id\":\"order\",\"receipt_data\":\"$receipt\"}"
api http://127.0.0.1:18095/v1/subscribers/order -H 'Authorization: Bearer bench-secret'
api http://127.0.0.1:18095/v1/subscribers/order -H 'Authorization: Bearer bench-secret'
api -X POST http://127.0.0.1:18095/v1/notifications/apple -d @"$out/bodies.txt"
api http://127.0.0.1:18095/metrics -H 'Authorization: Bearer bench-secret'
api http://127.0.0.1:18095/openapi.yaml
kill -TERM "$vpid"
wait "$vpid" || true

# Callgrind names each function once ("fn=(id) name", later "fn=(id)"), under the object it is in.
python3 - "$out/receiptd" "$root/Sources/receiptd/receiptd.order" $(ls -tr "$out"/callgrind.out*) <<'PY'
import re, sys
binary, target, *profiles = sys.argv[1:]
order, seen = [], set()
for path in profiles:  # the start-up dump first, then the rest
    objects, functions, current = {}, {}, None
    for line in open(path):
        m = re.match(r"^(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, key, name = m.groups()
        table = objects if kind.endswith("ob") else functions
        if name:
            table[key] = name
        if kind == "ob":
            current = objects[key]
        elif kind == "fn" and current == binary and functions[key] not in seen:
            seen.add(functions[key])
            order.append(functions[key])
open(target, "w").write("\n".join(order) + "\n")
print(f"{len(order)} functions written to {target}", file=sys.stderr)
PY
rm -f "$bin/receiptd"  # SwiftPM does not track the order file: the next release build links anew
