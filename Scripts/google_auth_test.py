"""receiptd's Google sign-in and its Pub/Sub push checks, with Google's own library (PyPI
`google-auth`) as the oracle. This script plays Google on loopback: the OAuth token endpoint, the
Play Developer API for one purchase, and the host of the push-signing keys. receiptd is
BIN_DIR/receiptd with a service account key made here, and Google Play pointed at this script.

- Every assertion receiptd sends to the token endpoint must verify with `google.auth.jwt.decode`
  (RS256 under the key file's key, for the token endpoint's audience) and name the account and
  the androidpublisher scope.
- A purchase posted to receiptd must be read from the API with the token granted, and then
  acknowledged.
- Pushes whose OIDC tokens `google.auth.jwt.encode` signs (the shape Pub/Sub sends) must be
  accepted; tokens for another audience, another account, expired, or signed by another key must
  be refused with 401. So the check can fail both ways.

Usage: python3 Scripts/google_auth_test.py BIN_DIR. Loopback only; stops by itself (60 s).
"""
import base64
import http.server
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import crypt, jwt

BIN = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "com.example.app"
ACCOUNT = "receiptd@oracle.iam.gserviceaccount.com"
PUSH_ACCOUNT = "pubsub-push@oracle.iam.gserviceaccount.com"
PUSH_AUDIENCE = "https://receiptd.example.com/v1/notifications/google"
PURCHASE_TOKEN = "oracle-token.AO-J1Oz"


def pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def public_pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def b64url_int(n):
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


account_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
push_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
stranger_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
state = {"assertions": [], "problems": [], "granted": set(), "reads": 0, "acknowledged": 0}
lock = threading.Lock()


class Google(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/token":
            form = urllib.parse.parse_qs(body.decode())
            assertion = form.get("assertion", [""])[0]
            token_url = f"http://127.0.0.1:{self.server.server_port}/token"
            try:
                claims = jwt.decode(assertion, certs={"oracle-key": public_pem(account_key)}, audience=token_url)
                if claims.get("iss") != ACCOUNT or "androidpublisher" not in claims.get("scope", ""):
                    raise ValueError(f"claims: {claims}")
                if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
                    raise ValueError(f"grant_type: {form.get('grant_type')}")
            except Exception as error:  # the oracle said no
                with lock:
                    state["problems"].append(f"google-auth refused receiptd's assertion: {error}")
                return self.reply(400, {"error": "invalid_grant"})
            access = "ya29.oracle-" + str(random.randrange(1 << 60))
            with lock:
                state["assertions"].append(assertion)
                state["granted"].add(access)
            return self.reply(200, {"access_token": access, "expires_in": 3599, "token_type": "Bearer"})
        if self.path.endswith(f"/tokens/{PURCHASE_TOKEN}:acknowledge") and self.authorized():
            with lock:
                state["acknowledged"] += 1
            return self.reply(204)
        return self.reply(404, {"error": {"code": 404, "status": "NOT_FOUND"}})

    def do_GET(self):
        if self.path == "/certs":
            numbers = push_key.public_key().public_numbers()
            return self.reply(200, {"keys": [{"kid": "push-key", "kty": "RSA", "alg": "RS256", "use": "sig",
                                              "n": b64url_int(numbers.n), "e": b64url_int(numbers.e)}]})
        expected = f"/androidpublisher/v3/applications/{PACKAGE}/purchases/subscriptionsv2/tokens/{PURCHASE_TOKEN}"
        if self.path == expected and self.authorized():
            with lock:
                state["reads"] += 1
            now = time.time()
            stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000Z"
            return self.reply(200, {
                "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "US", "startTime": stamp(now - 86400),
                "subscriptionState": "SUBSCRIPTION_STATE_ACTIVE", "latestOrderId": "GPA.3300-0000-0000-00001",
                "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" if state["acknowledged"]
                else "ACKNOWLEDGEMENT_STATE_PENDING",
                "lineItems": [{"productId": "monthly", "expiryTime": stamp(now + 29 * 86400),
                               "latestSuccessfulOrderId": "GPA.3300-0000-0000-00001",
                               "autoRenewingPlan": {"autoRenewEnabled": True,
                                                    "recurringPrice": {"currencyCode": "USD", "units": "4",
                                                                       "nanos": 990000000}}}]})
        return self.reply(404, {"error": {"code": 404, "status": "NOT_FOUND"}})

    def authorized(self):
        value = self.headers.get("Authorization", "")
        with lock:
            return value.startswith("Bearer ") and value[7:] in state["granted"]

    def log_message(self, *args):
        pass


def oidc(key=push_key, audience=PUSH_AUDIENCE, email=PUSH_ACCOUNT, expires_in=3600):
    """An ID token as Pub/Sub's push carries one, signed with google-auth."""
    now = int(time.time())
    signer = crypt.RSASigner.from_string(pem(key), key_id="push-key")
    claims = {"iss": "https://accounts.google.com", "aud": audience, "email": email, "email_verified": True,
              "sub": "1234567890", "iat": now - 10, "exp": now + expires_in}
    return jwt.encode(signer, claims).decode()


def push_body(message_id):
    notification = {"version": "1.0", "packageName": PACKAGE, "eventTimeMillis": str(int(time.time() * 1000)),
                    "subscriptionNotification": {"version": "1.0", "notificationType": 2,
                                                 "purchaseToken": PURCHASE_TOKEN}}
    data = base64.b64encode(json.dumps(notification).encode()).decode()
    return {"message": {"data": data, "messageId": message_id, "publishTime": "2026-11-26T00:00:00Z"},
            "subscription": "projects/oracle/subscriptions/rtdn"}


def call(port, path, body, token):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def main():
    google = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Google)
    threading.Thread(target=google.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{google.server_port}"
    scratch = tempfile.mkdtemp(prefix="receiptd-google-auth-")
    key_file = f"{scratch}/service-account.json"
    with open(key_file, "w") as f:
        json.dump({"type": "service_account", "project_id": "oracle", "private_key_id": "oracle-key",
                   "private_key": pem(account_key), "client_email": ACCOUNT, "client_id": "1",
                   "token_uri": f"{base}/token"}, f)
    port = random.randint(20000, 29999)
    env = dict(os.environ, RECEIPTD_ENVIRONMENT="development", RECEIPTD_REVENUE_CAT_PORT="0", RECEIPTD_HTTP_PORT=str(port),
               RECEIPTD_DATABASE_PATH=f"{scratch}/db.sqlite", RECEIPTD_LOG_LEVEL="warning",
               RECEIPTD_HTTP_ACCESS_LOG="false", RECEIPTD_API_PUBLIC_KEYS="ga-public", RECEIPTD_API_SECRET_KEYS="ga-secret",
               RECEIPTD_REFRESHER_ENABLED="false", RECEIPTD_GOOGLE_PLAY_SIMULATOR="false",
               RECEIPTD_GOOGLE_PLAY_PACKAGES=PACKAGE, RECEIPTD_GOOGLE_PLAY_SERVICE_ACCOUNT_KEY_FILE=key_file,
               RECEIPTD_GOOGLE_PLAY_API_URL=base, RECEIPTD_GOOGLE_PLAY_ALLOW_HTTP="true",
               RECEIPTD_GOOGLE_PLAY_ACKNOWLEDGE_POLL_MS="200",
               RECEIPTD_GOOGLE_PLAY_VOIDED_PURCHASES_ENABLED="false",
               RECEIPTD_GOOGLE_PLAY_NOTIFICATIONS_AUDIENCE=PUSH_AUDIENCE,
               RECEIPTD_GOOGLE_PLAY_NOTIFICATIONS_SERVICE_ACCOUNT_EMAIL=PUSH_ACCOUNT,
               RECEIPTD_GOOGLE_PLAY_NOTIFICATIONS_CERTS_URL=f"{base}/certs")
    log = open(f"{scratch}/receiptd.log", "w")
    service = subprocess.Popen([f"{BIN}/receiptd", "serve", "--config-dir", f"{ROOT}/Config"], env=env,
                               stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    failures, checks = [], 0
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        status, document = call(port, "/v1/receipts", {"app_user_id": "gina", "store": "play_store",
                                                         "package_name": PACKAGE, "purchase_token": PURCHASE_TOKEN},
                                "ga-public")
        checks += 1
        premium = (document.get("entitlements") or {}).get("premium") or {}
        if status != 200 or premium.get("active") is not True or premium.get("store") != "play_store":
            failures.append(f"the purchase was not verified: {status} {document}")
        deadline = time.time() + 20
        while time.time() < deadline and not state["acknowledged"]:
            time.sleep(0.1)
        checks += 1
        if not state["acknowledged"]:
            failures.append("the purchase was never acknowledged")
        # Pushes signed by google-auth: the good one is applied, every other one refused.
        cases = [("a push as Pub/Sub signs it", oidc(), 200),
                 ("another audience", oidc(audience="https://other.example/push"), 401),
                 ("another account", oidc(email="someone@other.iam.gserviceaccount.com"), 401),
                 ("expired", oidc(expires_in=-120), 401),
                 ("another key", oidc(key=stranger_key), 401)]
        for n, (name, token, expected) in enumerate(cases):
            status, answer = call(port, "/v1/notifications/google", push_body(f"oracle-{n}"), token)
            checks += 1
            if status != expected:
                failures.append(f"{name}: {status} {answer}, expected {expected}")
    finally:
        service.terminate()
        service.wait(timeout=20)
        google.shutdown()
    checks += len(state["assertions"])
    failures += state["problems"]
    if not state["assertions"]:
        failures.append("receiptd never signed in")
    if state["reads"] < 2:
        failures.append(f"the purchase was read {state['reads']} times, expected the post and the push")
    for line in failures:
        print("FAIL:", line)
    print(f"google-auth: {len(state['assertions'])} assertions verified, {state['reads']} reads, "
          f"{state['acknowledged']} acknowledgements, {len(cases)} pushes")
    print(f"{max(0, checks - len(failures))} passed, {len(failures)} failed")
    if failures:
        print(open(f"{scratch}/receiptd.log").read()[-4000:])
    shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
