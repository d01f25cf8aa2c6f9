#!/usr/bin/env python3
"""Outage drill: Apple goes down for a while, then comes back.

Starts `receiptd simulate` and receiptd (production settings, default circuit breaker: 5 failures,
30 s first pause doubling to 300 s), gives USERS users a purchase each, then takes the simulator's
verifyReceipt down (HTTP 503) for OUTAGE seconds while clients keep posting their receipts and
backends keep reading. Checks, and prints as figures:
  - every POST during the outage answers 503 app_store_unavailable with Retry-After and, for a known
    user, their last document marked stale;
  - no user's entitlements change at any point (read before, during and after);
  - Apple's calls during the outage stay within what the breaker allows: the failures that open it
    (each verification's retries included) plus one probe per pause;
  - after Apple is back, the breaker closes and POSTs answer 200 again.
Exits 1 when a check fails. Loopback only; stops by itself.

Usage: Scripts/outage_drill.py BIN_DIR [OUTAGE_SECONDS=60] [USERS=200]
"""
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1]
OUTAGE = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
USERS = int(sys.argv[3]) if len(sys.argv) > 3 else 200
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM_PORT, PORT = 18196, 18195
SCENARIOS = ["active_monthly", "trial", "cancelled", "grace_period", "non_consumable", "offer_code", "expired_voluntary",
             "refunded", "billing_retry", "family_shared"]
THRESHOLD, OPEN_S, MAX_OPEN_S, ATTEMPTS = 5, 30, 300, 4  # defaults: breaker; 1 + appStore.maxRetries
CLIENTS = 4


def request(method, port, path, body=None, key=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    try:
        parsed = json.loads(data) if data else {}
    except ValueError:
        parsed = {}
    return r.status, parsed, dict(r.getheaders())


def receipt(user):
    scenario = SCENARIOS[hash_user(user) % len(SCENARIOS)]
    return base64.b64encode(f"{scenario}:{user}".encode()).decode()


def hash_user(user):
    return int(user[1:])


def post(user):
    return request("POST", PORT, "/v1/receipts", {"app_user_id": user, "receipt_data": receipt(user)}, "drill-public")


def entitlements(user):
    status, doc, _ = request("GET", PORT, f"/v1/subscribers/{user}", key="drill-secret")
    assert status == 200, (user, status, doc)
    return {name: e.get("active") for name, e in doc.get("entitlements", {}).items()}


def circuit():
    _, body, _ = request("GET", PORT, "/readyz")
    a = body.get("app_store") or {}
    return a.get("circuit"), a.get("retry_in_seconds")


def main():
    work = tempfile.mkdtemp(prefix="receiptd-drill-")
    sim = subprocess.Popen([f"{BIN}/receiptd", "simulate", "--port", str(SIM_PORT)], stdout=subprocess.DEVNULL,
                           stderr=open(f"{work}/simulator.log", "w"))
    env = dict(os.environ, RECEIPTD_ENVIRONMENT="production", RECEIPTD_HTTP_PORT=str(PORT), RECEIPTD_LOG_LEVEL="notice",
               RECEIPTD_HTTP_ACCESS_LOG="false", RECEIPTD_DATABASE_PATH=f"{work}/drill.sqlite",
               RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY=f"{ROOT}/Migrations", RECEIPTD_APP_STORE_ALLOW_HTTP="true",
               RECEIPTD_APP_STORE_PRODUCTION_URL=f"http://127.0.0.1:{SIM_PORT}/production/verifyReceipt",
               RECEIPTD_APP_STORE_SANDBOX_URL=f"http://127.0.0.1:{SIM_PORT}/sandbox/verifyReceipt",
               RECEIPTD_API_PUBLIC_KEYS="drill-public", RECEIPTD_API_SECRET_KEYS="drill-secret",
               RECEIPTD_LIMITS_RECEIPTS_PER_KEY_PER_SECOND="0", RECEIPTD_LIMITS_RECEIPTS_PER_ADDRESS_PER_SECOND="0")
    log = open(f"{work}/receiptd.log", "w")
    server = subprocess.Popen([f"{BIN}/receiptd", "serve", "--config-dir", f"{ROOT}/Config"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    failures = []
    try:
        for _ in range(100):
            try:
                if request("GET", PORT, "/readyz")[0] == 200 and request("POST", SIM_PORT, "/control/outage", {"seconds": 0})[0] == 204:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        users = [f"u{i}" for i in range(USERS)]
        for u in users:
            status, body, _ = post(u)
            if status != 200:
                failures.append(f"seeding {u}: {status} {body}")
        before = {u: entitlements(u) for u in users}
        active = sum(1 for e in before.values() if any(e.values()))
        print(f"seeded {USERS} users over {len(SCENARIOS)} scenarios; {active} entitled")

        calls_before = stats()["calls"]
        request("POST", SIM_PORT, "/control/outage", {"seconds": OUTAGE})
        started = time.monotonic()
        print(f"Apple down for {OUTAGE:.0f} s")
        counts = {}
        stale_ok = [0, 0]
        downgraded = set()
        stop = threading.Event()
        lock = threading.Lock()

        def client(offset):
            i = offset
            while not stop.is_set():
                u = users[i % len(users)]
                i += 7
                status, body, headers = post(u)
                with lock:
                    counts[status] = counts.get(status, 0) + 1
                if status == 503:
                    sub = body.get("subscriber")
                    good = (body.get("error", {}).get("code") == "app_store_unavailable" and "Retry-After" in headers
                            and sub is not None and sub.get("stale") is True and sub.get("stale_seconds") is not None)
                    got = {n: e.get("active") for n, e in (sub or {}).get("entitlements", {}).items()}
                    with lock:
                        stale_ok[0 if good and got == before[u] else 1] += 1
                elif status != 200:
                    with lock:
                        failures.append(f"POST {u} during outage: {status} {body}")
                time.sleep(0.05)

        def reader():
            i = 0
            while not stop.is_set():
                u = users[i % len(users)]
                i += 1
                if entitlements(u) != before[u]:
                    with lock:
                        downgraded.add(u)
                time.sleep(0.01)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)] + [threading.Thread(target=reader)]
        for t in threads:
            t.start()
        timeline = []
        opened_at, calls_to_open = None, None
        last_mark = -5.0
        while time.monotonic() - started < OUTAGE:
            state, retry = circuit()
            elapsed = time.monotonic() - started
            if state == "open" and opened_at is None:
                # Exchanges already out when it opened still land (Apple answers 503 at once); a
                # second later only probes reach Apple.
                time.sleep(1)
                opened_at, calls_to_open = elapsed, stats()["calls_during_outage"]
            if elapsed - last_mark >= 5:
                timeline.append((round(elapsed), state, retry))
                last_mark = elapsed
            time.sleep(0.2)
        down = stats()
        # Apple is back: the breaker's next probe closes it. Keep posting until a 200.
        back = time.monotonic()
        recovered = None
        while time.monotonic() - back < MAX_OPEN_S + 30:
            with lock:
                before_count = counts.get(200, 0)
            time.sleep(1)
            with lock:
                if counts.get(200, 0) > before_count:
                    recovered = time.monotonic() - back
                    break
        stop.set()
        for t in threads:
            t.join()
        after = {u: entitlements(u) for u in users}
        changed = [u for u in users if after[u] != before[u]]

        during = down["calls_during_outage"]
        pauses, t, pause = 0, opened_at or 0.0, OPEN_S
        while t + pause < OUTAGE:  # a probe at the end of each pause; each failed one doubles the next
            t += pause
            pauses += 1
            pause = min(2 * pause, MAX_OPEN_S)
        # To open it: THRESHOLD failed verifications with their retries, plus what the other
        # clients' verifications already sent when it opened (their next retry is not sent).
        to_open_allowed = (THRESHOLD + CLIENTS - 1) * ATTEMPTS
        probes = during - (calls_to_open or 0)
        print("circuit during the outage (s: state, retry in):", ", ".join(f"{s}:{c}/{r}" for s, c, r in timeline))
        print(f"POST answers during and after: {dict(sorted(counts.items()))}")
        print(f"503s with the user's stale document, unchanged: {stale_ok[0]}; without or different: {stale_ok[1]}")
        print(f"Apple calls during the {OUTAGE:.0f} s outage: {during}: {calls_to_open} until the breaker opened "
              f"at {opened_at or 0:.1f} s (at most {to_open_allowed}: {THRESHOLD} failed verifications + {CLIENTS - 1} "
              f"in flight, x {ATTEMPTS} attempts), then {probes} (at most {pauses}: one probe per pause); before it: {calls_before}")
        print(f"first 200 after Apple came back: {recovered:.1f} s" if recovered is not None else "never recovered")
        print(f"users whose entitlements changed while reading during the drill: {len(downgraded)}; after it: {len(changed)}")
        if stale_ok[1]:
            failures.append(f"{stale_ok[1]} 503s without the stale document")
        if opened_at is None or calls_to_open > to_open_allowed or probes > pauses:
            failures.append(f"Apple called more than the breaker allows: {calls_to_open} to open, then {probes}")
        if recovered is None:
            failures.append("POSTs never answered 200 again")
        if downgraded or changed:
            failures.append(f"entitlements changed: {sorted(downgraded | set(changed))[:10]}")
    finally:
        server.terminate()
        sim.terminate()
        server.wait(timeout=30)
        sim.wait(timeout=30)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:20]))
        print(f"logs in {work}")
        sys.exit(1)
    print("outage drill passed")


def stats():
    return request("GET", SIM_PORT, "/control/stats")[1]


if __name__ == "__main__":
    main()
