#!/usr/bin/env python3
"""Crash harness: acknowledged writes survive SIGKILL, and so do their webhooks.

Runs receiptd against `receiptd simulate` on one SQLite file, under load from receipt posters and
App Store Server Notification (V1) senders, with a webhook endpoint pointed at a slow
`receiptd webhook-sink` (so deliveries are in flight when it dies), and kills it with SIGKILL at a
random moment, KILLS times, restarting it each time. Every request answered 200 is an acknowledged
write. At the end receiptd is started once more and every acknowledged write must be there: each
posted user's document with their purchase, each notification in the notifications table. Once the
outbox has drained, every event stored (each acknowledged write's among them) must have reached the
sink at least once, signed and well formed, each subscriber's in version order, and every delivery
must be `delivered`. Then `PRAGMA integrity_check` must answer ok. Prints the figures; exits 1 on any
loss. Loopback only; stops by itself.

Usage: Scripts/crash_harness.py BIN_DIR [KILLS=20] [SEED]
"""
import base64
import hashlib
import http.client
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1]
KILLS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM_PORT, PORT, SINK_PORT = 18296, 18295, 18297
SECRET = "harness-shared-" + os.urandom(6).hex()
HOOK_SECRET = "harness-hook-" + os.urandom(12).hex()
SINK_DELAY_MS = 30
POSTERS, NOTIFIERS = 6, 2


def request(method, port, path, body=None, key=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    conn.request(method, path, body=body if isinstance(body, (bytes, str)) or body is None else json.dumps(body),
                 headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def b64(text):
    return base64.b64encode(text.encode()).decode()


def main():
    rng = random.Random(SEED)
    work = tempfile.mkdtemp(prefix="receiptd-crash-")
    db = f"{work}/crash.sqlite"
    sim_env = dict(os.environ, RECEIPTD_APP_STORE_SHARED_SECRET=SECRET)
    sim = subprocess.Popen([f"{BIN}/receiptd", "simulate", "--port", str(SIM_PORT)], env=sim_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, RECEIPTD_ENVIRONMENT="production", RECEIPTD_HTTP_PORT=str(PORT), RECEIPTD_LOG_LEVEL="warning",
               RECEIPTD_HTTP_ACCESS_LOG="false", RECEIPTD_DATABASE_PATH=db,
               RECEIPTD_DATABASE_MIGRATIONS_DIRECTORY=f"{ROOT}/Migrations", RECEIPTD_APP_STORE_ALLOW_HTTP="true",
               RECEIPTD_APP_STORE_PRODUCTION_URL=f"http://127.0.0.1:{SIM_PORT}/production/verifyReceipt",
               RECEIPTD_APP_STORE_SANDBOX_URL=f"http://127.0.0.1:{SIM_PORT}/sandbox/verifyReceipt",
               RECEIPTD_APP_STORE_SHARED_SECRET=SECRET, RECEIPTD_API_PUBLIC_KEYS="crash-public",
               RECEIPTD_API_SECRET_KEYS="crash-secret", RECEIPTD_LIMITS_RECEIPTS_PER_KEY_PER_SECOND="0",
               RECEIPTD_LIMITS_RECEIPTS_PER_ADDRESS_PER_SECOND="0", RECEIPTD_REFRESHER_ENABLED="false")
    env.update(RECEIPTD_WEBHOOKS_ENDPOINTS="harness", RECEIPTD_WEBHOOKS_ALLOW_HTTP="true",
               RECEIPTD_WEBHOOKS_HARNESS_URL=f"http://127.0.0.1:{SINK_PORT}/hooks",
               RECEIPTD_WEBHOOKS_HARNESS_SECRET=HOOK_SECRET, RECEIPTD_WEBHOOKS_HARNESS_TIMEOUT_MS="2000",
               RECEIPTD_WEBHOOKS_LEASE_MS="1000", RECEIPTD_WEBHOOKS_POLL_MS="100",
               RECEIPTD_WEBHOOKS_RETRY_FIRST_DELAY_MS="200", RECEIPTD_WEBHOOKS_RETRY_MAX_DELAY_MS="1000")
    log = open(f"{work}/receiptd.log", "w")
    sink = subprocess.Popen([f"{BIN}/receiptd", "webhook-sink", "--port", str(SINK_PORT), "--secret", HOOK_SECRET,
                             "--delay-ms", str(SINK_DELAY_MS)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    arrivals = []  # the sink's lines, one per request

    def read_sink():
        for line in sink.stdout:
            arrivals.append(json.loads(line))

    sink_reader = threading.Thread(target=read_sink)
    sink_reader.start()

    def start():
        p = subprocess.Popen([f"{BIN}/receiptd", "serve", "--config-dir", f"{ROOT}/Config"], env=env, stdout=log,
                             stderr=subprocess.STDOUT)
        for _ in range(300):
            try:
                if request("GET", PORT, "/readyz", timeout=1)[0] == 200:
                    return p
            except OSError:
                pass
            if p.poll() is not None:
                raise SystemExit(f"receiptd exited with {p.returncode} on start; see {work}/receiptd.log")
            time.sleep(0.05)
        raise SystemExit("receiptd did not become ready")

    for _ in range(100):
        try:
            if request("POST", SIM_PORT, "/control/outage", {"seconds": 0}, timeout=1)[0] == 204:
                break
        except OSError:
            time.sleep(0.1)

    acked_receipts = []  # users whose POST answered 200
    acked_notifications = []  # original_transaction_ids of V1 notifications answered 200
    sent = {"receipts": 0, "notifications": 0, "errors": 0}
    lock = threading.Lock()
    counter = [0]

    def next_id():
        with lock:
            counter[0] += 1
            return counter[0]

    def poster(stop):
        while not stop.is_set():
            user = f"c{next_id()}"
            body = {"app_user_id": user, "receipt_data": b64(f"active_monthly:{user}")}
            try:
                status, _ = request("POST", PORT, "/v1/receipts", body, "crash-public")
            except OSError:
                with lock:
                    sent["errors"] += 1
                continue
            with lock:
                sent["receipts"] += 1
                if status == 200:
                    acked_receipts.append(user)

    def notifier(stop):
        while not stop.is_set():
            tag = f"n{next_id()}"
            answer = request("POST", SIM_PORT, "/production/verifyReceipt",
                             {"receipt-data": b64(f"active_monthly:{tag}"), "password": SECRET})[1]
            unified = json.loads(answer)
            original = unified["latest_receipt_info"][0]["original_transaction_id"]
            body = {"notification_type": "DID_RENEW", "password": SECRET, "bid": "com.example.app", "environment": "PROD",
                    "original_transaction_id": original, "unified_receipt": unified}
            try:
                status, _ = request("POST", PORT, "/v1/notifications/apple", body)
            except OSError:
                with lock:
                    sent["errors"] += 1
                continue
            with lock:
                sent["notifications"] += 1
                if status == 200:
                    acked_notifications.append(original)

    kill_points = []
    try:
        for k in range(KILLS):
            server = start()
            stop = threading.Event()
            threads = [threading.Thread(target=poster, args=(stop,)) for _ in range(POSTERS)]
            threads += [threading.Thread(target=notifier, args=(stop,)) for _ in range(NOTIFIERS)]
            for t in threads:
                t.start()
            delay = rng.uniform(0.2, 2.5)
            time.sleep(delay)
            with lock:
                kill_points.append((round(delay, 2), len(acked_receipts), len(acked_notifications)))
            server.send_signal(signal.SIGKILL)
            server.wait()
            stop.set()
            for t in threads:
                t.join()
            print(f"kill {k + 1:2}/{KILLS} after {delay:.2f} s: acknowledged so far {len(acked_receipts)} receipts, "
                  f"{len(acked_notifications)} notifications; {len(arrivals)} webhook requests", flush=True)

        server = start()
        lost_receipts = []
        for user in acked_receipts:
            status, data = request("GET", PORT, f"/v1/subscribers/{user}", key="crash-secret")
            doc = json.loads(data) if status == 200 else {}
            if not (doc.get("entitlements") or {}).get("premium", {}).get("active"):
                lost_receipts.append(user)
        drained = wait_for_outbox(stalled=30, most=900)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    finally:
        sim.terminate()
        sim.wait(timeout=30)
        sink.terminate()
        sink.wait(timeout=30)
        sink_reader.join()

    conn = sqlite3.connect(db)
    stored = {row[0] for row in conn.execute("SELECT original_transaction_id FROM notifications")}
    lost_notifications = [o for o in acked_notifications if o not in stored]
    webhook_problems = check_webhooks(conn, arrivals, acked_receipts, drained)
    integrity = conn.execute("PRAGMA integrity_check").fetchall()
    rows = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ["subscribers", "transactions", "notifications", "verifications"]}
    conn.close()
    print(f"seed {SEED}; {KILLS} SIGKILLs; requests sent: {sent['receipts']} receipts, {sent['notifications']} "
          f"notifications answered, {sent['errors']} cut off by a kill")
    print(f"acknowledged: {len(acked_receipts)} receipts, {len(acked_notifications)} notifications; rows: {rows}")
    print(f"lost acknowledged writes: {len(lost_receipts)} receipts, {len(lost_notifications)} notifications")
    print(f"PRAGMA integrity_check: {', '.join(r[0] for r in integrity)}")
    if lost_receipts or lost_notifications or webhook_problems or integrity != [("ok",)]:
        print(f"FAILED: lost {lost_receipts[:5]} {lost_notifications[:5]}; webhooks: {webhook_problems[:5]}; "
              f"database kept at {db}")
        sys.exit(1)
    print("crash harness passed")


def wait_for_outbox(stalled, most):
    """Waits until /readyz reports no pending webhook delivery; True when it got there. It gives up
    when the backlog has not shrunk for `stalled` seconds, or after `most`: the backlog grows with
    the receipts acknowledged, and the slow sink takes about 250 a second on two cores (a fixed
    two minutes failed with 40,000 to send, draining all the while)."""
    start = progress = time.time()
    fewest = None
    while time.time() - progress < stalled and time.time() - start < most:
        status, data = request("GET", PORT, "/readyz")
        pending = json.loads(data).get("webhooks", {}).get("harness", {}).get("pending") if status == 200 else None
        if pending == 0:
            return True
        if pending is not None and (fewest is None or pending < fewest):
            fewest, progress = pending, time.time()
        time.sleep(0.2)
    return False


def message_id(app_user_id, event_key):
    """Docs/webhooks.md: the id is evt_ and the first 32 hex digits of SHA-256(user NUL key)."""
    return "evt_" + hashlib.sha256(app_user_id.encode() + b"\0" + event_key.encode()).hexdigest()[:32]


def check_webhooks(conn, arrivals, acked_receipts, drained):
    """Every stored event reached the sink at least once (signed, well formed), each subscriber's in
    version order; every delivery ended `delivered`. Prints the figures; returns the problems."""
    problems = [] if drained else ["the outbox stopped draining (30 s without progress, or 900 s in all)"]
    events = {message_id(user, key): user for user, key in conn.execute("SELECT app_user_id, event_key FROM events")}
    statuses = dict(conn.execute("SELECT status, count(*) FROM webhook_deliveries GROUP BY status").fetchall())
    bad = [a for a in arrivals if a["signature"] != "valid" or a["schema_problems"]]
    problems += [f"bad request {a}" for a in bad[:5]]
    received = {}
    for a in arrivals:
        received[a["webhook_id"]] = received.get(a["webhook_id"], 0) + 1
    missing = [i for i in events if i not in received]
    problems += [f"event {i} of {events[i]} never arrived" for i in missing[:5]]
    problems += [f"a webhook {i} for no stored event" for i in received if i not in events][:5]
    users_heard = {a["app_user_id"] for a in arrivals}
    problems += [f"acknowledged receipt of {u} sent no webhook" for u in acked_receipts if u not in users_heard][:5]
    problems += [f"{n} deliveries {s}" for s, n in statuses.items() if s != "delivered"]
    last_version, first_seen = {}, set()
    for a in arrivals:  # first arrivals of each id, per subscriber, never go back in version
        if a["webhook_id"] in first_seen:
            continue
        first_seen.add(a["webhook_id"])
        if a["version"] < last_version.get(a["app_user_id"], 0):
            problems.append(f"{a['app_user_id']}: version {a['version']} after {last_version[a['app_user_id']]}")
        last_version[a["app_user_id"]] = max(a["version"], last_version.get(a["app_user_id"], 0))
    resent = sum(1 for n in received.values() if n > 1)
    print(f"webhooks: {len(events)} events stored, {len(arrivals)} requests to the sink, {len(received)} distinct ids, "
          f"{resent} sent more than once (cut off by a kill or re-claimed), {len(missing)} never arrived; "
          f"deliveries by status {statuses}")
    return problems


if __name__ == "__main__":
    main()
