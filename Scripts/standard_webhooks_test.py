"""Webhook deliveries verified by the official Standard Webhooks library (PyPI `standardwebhooks`),
as a receiver that uses it would: receiptd (BIN_DIR/receiptd, its built-in App Store simulator, a
scratch database) with one endpoint asking for the Standard Webhooks headers, signing with two
`whsec_` secrets (a rotation), pointed at a receiver on loopback. Users post receipts; every
delivery must verify with the library under each secret, carry its payload's id as `webhook-id`,
and keep that id on a retry (the receiver refuses the first attempt of one message). The library
must refuse a delivery whose body or secret differs, so the check can fail.

Usage: python3 Scripts/standard_webhooks_test.py BIN_DIR. Loopback only; stops by itself (60 s).
"""
import base64
import http.server
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

BIN = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEW, OLD = ("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode() for _ in range(2))
USERS = 6
arrivals = []  # (headers, body)
lock = threading.Lock()
refused_once = set()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {k.lower(): v for k, v in self.headers.items()}
        with lock:
            arrivals.append((headers, body))
            # The first message is refused once: its retry must carry the same webhook-id.
            first_time = not refused_once
            if first_time:
                refused_once.add(headers.get("webhook-id"))
        self.send_response(503 if first_time else 204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def call(method, port, path, body=None, key="swh-secret"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read() or b"{}")


def main():
    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    port = random.randint(20000, 29999)
    scratch = tempfile.mkdtemp(prefix="receiptd-swh-")
    env = dict(os.environ, RECEIPTD_ENVIRONMENT="development", RECEIPTD_REVENUE_CAT_PORT="0", RECEIPTD_HTTP_PORT=str(port),
               RECEIPTD_DATABASE_PATH=f"{scratch}/db.sqlite", RECEIPTD_LOG_LEVEL="warning",
               RECEIPTD_HTTP_ACCESS_LOG="false", RECEIPTD_API_PUBLIC_KEYS="swh-public",
               RECEIPTD_API_SECRET_KEYS="swh-secret", RECEIPTD_REFRESHER_ENABLED="false",
               RECEIPTD_WEBHOOKS_ENDPOINTS="crm", RECEIPTD_WEBHOOKS_ALLOW_HTTP="true",
               RECEIPTD_WEBHOOKS_CRM_URL=f"http://127.0.0.1:{receiver.server_port}/hooks",
               RECEIPTD_WEBHOOKS_CRM_SECRET=f"{NEW},{OLD}", RECEIPTD_WEBHOOKS_CRM_STANDARD_WEBHOOKS="true",
               RECEIPTD_WEBHOOKS_POLL_MS="50", RECEIPTD_WEBHOOKS_RETRY_FIRST_DELAY_MS="200")
    log = open(f"{scratch}/receiptd.log", "w")
    service = subprocess.Popen([f"{BIN}/receiptd", "serve", "--config-dir", f"{ROOT}/Config"], env=env,
                               stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    failures = []
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        for n, scenario in enumerate(["active_monthly", "trial", "grace_period", "refunded", "upgraded", "cancelled"]):
            receipt = base64.b64encode(f"{scenario}:swh{n}".encode()).decode()
            call("POST", port, "/v1/receipts", {"app_user_id": f"swh-{n}", "receipt_data": receipt}, key="swh-public")
        # Until every delivery is delivered (or failed for good), at most 60 s.
        deadline = time.time() + 60
        while time.time() < deadline:
            pending = call("GET", port, "/v1/admin/webhooks/deliveries?status=pending")["deliveries"]
            if not pending and arrivals:
                break
            time.sleep(0.2)
        else:
            failures.append("deliveries still pending after 60 s")
        delivered = call("GET", port, "/v1/admin/webhooks/deliveries?status=delivered&limit=200")["deliveries"]
        failed = call("GET", port, "/v1/admin/webhooks/deliveries?status=failed")["deliveries"]
        if failed:
            failures.append(f"{len(failed)} deliveries failed for good")
    finally:
        service.terminate()
        service.wait(timeout=20)
        receiver.shutdown()

    ids_by_attempt = {}
    for headers, body in arrivals:
        for name, secret in (("new", NEW), ("old", OLD)):
            try:
                payload = Webhook(secret).verify(body, headers)
            except WebhookVerificationError as error:
                failures.append(f"{headers.get('webhook-id')}: the {name} secret does not verify: {error}")
                continue
            if payload["id"] != headers["webhook-id"]:
                failures.append(f"webhook-id {headers['webhook-id']} is not the payload's id {payload['id']}")
        ids_by_attempt.setdefault(headers["webhook-id"], []).append(int(headers.get("receiptd-delivery-attempt", "0")))
    # The oracle can say no: another body, another secret.
    if arrivals:
        headers, body = arrivals[-1]
        for secret, data in ((NEW, body + b" "), ("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode(), body)):
            try:
                Webhook(secret).verify(data, headers)
                failures.append("the library accepted a delivery it should refuse")
            except WebhookVerificationError:
                pass
    retried = [i for i, attempts in ids_by_attempt.items() if len(attempts) > 1]
    if len(retried) != 1 or sorted(ids_by_attempt[retried[0]]) != [1, 2]:
        failures.append(f"the refused message was not retried once under its id: {ids_by_attempt}")
    if len(delivered) != len(ids_by_attempt) or len(delivered) < USERS:
        failures.append(f"{len(delivered)} delivered, {len(ids_by_attempt)} distinct messages arrived")
    for line in failures:
        print("FAIL:", line)
    checks = 2 * len(arrivals)
    print(f"standard webhooks: {len(arrivals)} requests ({len(ids_by_attempt)} messages) verified with "
          f"standardwebhooks under both secrets")
    print(f"{max(0, checks - len(failures))} passed, {len(failures)} failed")
    if failures:
        print(open(f"{scratch}/receiptd.log").read()[-4000:])
    shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
