#!/usr/bin/env python3
"""Crash harness: acknowledged writes survive SIGKILL.

Runs receiptd against `receiptd simulate` on one SQLite file, under load from receipt posters and
App Store Server Notification (V1) senders, and kills it with SIGKILL at a random moment, KILLS
times, restarting it each time. Every request answered 200 is an acknowledged write. At the end
receiptd is started once more and every acknowledged write must be there: each posted user's
document with their purchase, each notification in the notifications table. Then
`PRAGMA integrity_check` must answer ok. Prints the figures; exits 1 on any loss.
Loopback only; stops by itself.

Usage: Scripts/crash_harness.py BIN_DIR [KILLS=20] [SEED]
"""
import base64
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
SIM_PORT, PORT = 18296, 18295
SECRET = "harness-shared-" + os.urandom(6).hex()
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
    log = open(f"{work}/receiptd.log", "w")

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
                  f"{len(acked_notifications)} notifications", flush=True)

        server = start()
        lost_receipts = []
        for user in acked_receipts:
            status, data = request("GET", PORT, f"/v1/subscribers/{user}", key="crash-secret")
            doc = json.loads(data) if status == 200 else {}
            if not (doc.get("entitlements") or {}).get("premium", {}).get("active"):
                lost_receipts.append(user)
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    finally:
        sim.terminate()
        sim.wait(timeout=30)

    conn = sqlite3.connect(db)
    stored = {row[0] for row in conn.execute("SELECT original_transaction_id FROM notifications")}
    lost_notifications = [o for o in acked_notifications if o not in stored]
    integrity = conn.execute("PRAGMA integrity_check").fetchall()
    rows = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ["subscribers", "transactions", "notifications", "verifications"]}
    conn.close()
    print(f"seed {SEED}; {KILLS} SIGKILLs; requests sent: {sent['receipts']} receipts, {sent['notifications']} "
          f"notifications answered, {sent['errors']} cut off by a kill")
    print(f"acknowledged: {len(acked_receipts)} receipts, {len(acked_notifications)} notifications; rows: {rows}")
    print(f"lost acknowledged writes: {len(lost_receipts)} receipts, {len(lost_notifications)} notifications")
    print(f"PRAGMA integrity_check: {', '.join(r[0] for r in integrity)}")
    if lost_receipts or lost_notifications or integrity != [("ok",)]:
        print(f"FAILED: lost {lost_receipts[:5]} {lost_notifications[:5]}; database kept at {db}")
        sys.exit(1)
    print("crash harness passed")


if __name__ == "__main__":
    main()
