"""receiptd's offer signatures checked against Apple's own App Store Server Library (PyPI
`app-store-server-library`) as the oracle. receiptd (BIN_DIR/receiptd, its built-in App Store
simulator, a scratch database) signs offers with Apple's published test key; this script:

- builds the text Apple's `PromotionalOfferSignatureCreator` signs for the same inputs (the
  creator itself, its signing step replaced by one that records the text) and verifies receiptd's
  original-API signature over it with the key's public half;
- signs the same promotional offer and introductory-eligibility requests with Apple's
  `PromotionalOfferV2SignatureCreator` and `IntroductoryOfferEligibilitySignatureCreator`, decodes
  both, and compares headers and claims (all but `iat` and `nonce`, which differ by design), and
  verifies receiptd's JWS with the key's public half;
- checks that a tampered signature fails, so the check can fail;
- builds Retention Messaging real-time requests with Apple's `DecodedRealtimeRequestBody`, signs
  them with Apple's published test leaf key, has Apple's `SignedDataVerifier` accept them, posts
  them to receiptd, and reads receiptd's answers with Apple's `RealtimeResponseBody`: a V2
  promotional offer compared with Apple's creator's, a V1 one verified over Apple's text, a switch
  of plan, a message; a request whose signature does not cover it is refused.

Usage: python3 Scripts/apple_offers_test.py BIN_DIR. Loopback only; stops by itself (60 s).
"""
import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import jwt
from appstoreserverlibrary.models.DecodedRealtimeRequestBody import DecodedRealtimeRequestBody
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.LibraryUtility import _get_cattrs_converter
from appstoreserverlibrary.models.RealtimeResponseBody import RealtimeResponseBody
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, _ChainVerifier
from appstoreserverlibrary.jws_signature_creator import (IntroductoryOfferEligibilitySignatureCreator,
                                                         PromotionalOfferV2SignatureCreator)
from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import ECDSA
from cryptography.hazmat.primitives.hashes import SHA256

BIN = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, f"{ROOT}/Benchmarks")
from sign_notifications import sign as sign_as_apple  # noqa: E402  (Apple's test leaf key, x5c to the test CA)

FIXTURES = f"{ROOT}/Sources/ReceiptTesting/Fixtures/SignedData"
APP_APPLE_ID = 1234567890  # the simulator's app (ServerAPISimulator.appAppleID)
MESSAGES = {name: str(uuid.uuid4()) for name in ("v2", "v1", "switch", "note")}
KEY_FILE = f"{ROOT}/Sources/ReceiptTesting/Fixtures/AppStoreServerAPI/testSigningKey.p8"
KEY_ID, ISSUER, BUNDLE = "ORACLEKEY1", "00000000-0000-4000-8000-0000000000bb", "com.example.app"
KEY_PEM = open(KEY_FILE, "rb").read()
PUBLIC = serialization.load_pem_private_key(KEY_PEM, password=None).public_key()


class Recorder:
    """Stands in for the creator's key: records the text Apple's library would sign."""
    def __init__(self):
        self.text = None

    def sign(self, data, algorithm):
        self.text = data
        return b""


def apple_v1_text(product, offer, username, nonce, timestamp):
    creator = PromotionalOfferSignatureCreator(KEY_PEM, KEY_ID, BUNDLE)
    recorder = Recorder()
    creator._signing_key = recorder
    creator.create_signature(product, offer, username, uuid.UUID(nonce), timestamp)
    return recorder.text


def call(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer ao-public", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def compare(name, ours, theirs, failures):
    header_ours, header_theirs = jwt.get_unverified_header(ours), jwt.get_unverified_header(theirs)
    if header_ours != header_theirs:
        failures.append(f"{name}: header {header_ours} differs from Apple's {header_theirs}")
    claims_ours = jwt.decode(ours, options={"verify_signature": False})
    claims_theirs = jwt.decode(theirs, options={"verify_signature": False})
    for claims in (claims_ours, claims_theirs):
        claims.pop("iat"), claims.pop("nonce")
    if claims_ours != claims_theirs:
        failures.append(f"{name}: claims {claims_ours} differ from Apple's {claims_theirs}")
    try:
        jwt.decode(ours, PUBLIC, algorithms=["ES256"], audience=claims_theirs["aud"])
    except jwt.PyJWTError as error:
        failures.append(f"{name}: receiptd's JWS does not verify: {error}")


def realtime_request(original, locale):
    """A real-time request as Apple's model has it, signed as Apple signs, accepted by Apple's verifier."""
    model = DecodedRealtimeRequestBody(
        originalTransactionId=original, appAppleId=APP_APPLE_ID, productId="monthly", userLocale=locale,
        requestIdentifier=uuid.uuid4(), signedDate=int(time.time() * 1000), environment=Environment.PRODUCTION)
    payload = _get_cattrs_converter(DecodedRealtimeRequestBody).unstructure(model)
    payload["requestIdentifier"] = str(payload["requestIdentifier"])
    signed = sign_as_apple(payload)
    root = open(f"{FIXTURES}/testCA.der", "rb").read()
    verifier = SignedDataVerifier([root], False, Environment.PRODUCTION, BUNDLE, APP_APPLE_ID)
    # Apple's test certificates carry no Authority Key Identifier, which X509_STRICT requires:
    # relaxed for them only (the chain, OIDs and signature are still checked).
    verifier._chain_verifier = _ChainVerifier([root], enable_strict_checks=False)
    decoded = verifier.verify_and_decode_realtime_request(signed)
    assert decoded.originalTransactionId == original and decoded.userLocale == locale
    return signed


def post_raw(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def held_originals(port):
    """The original transaction ids of ora's document, read with the secret key."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/subscribers/ora",
                                     headers={"Authorization": "Bearer ao-secret"})
    document = json.loads(urllib.request.urlopen(request, timeout=20).read())
    found = []

    def walk(value):
        if isinstance(value, dict):
            if isinstance(value.get("original_transaction_id"), str):
                found.append(value["original_transaction_id"])
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(document)
    return found


def retention_checks(port, failures):
    """Apple's real-time requests in, receiptd's answers read with Apple's response model."""
    found = held_originals(port)
    if not found:
        failures.append("retention: no original transaction id in ora's document")
        return 1
    original, checks = found[0], 0
    converter = _get_cattrs_converter(RealtimeResponseBody)
    for locale, expected in (("en-US", "v2"), ("fr-FR", "v1"), ("de-DE", "switch"), ("ja-JP", "note")):
        checks += 1
        status, body = post_raw(port, "/v1/retention-messages/apple",
                                json.dumps({"signedPayload": realtime_request(original, locale)}).encode())
        if status != 200:
            failures.append(f"retention {locale}: {status} {body}")
            continue
        answer = converter.structure(body, RealtimeResponseBody)
        kinds = [k for k in ("message", "alternateProduct", "promotionalOffer") if getattr(answer, k) is not None]
        if len(kinds) != 1:
            failures.append(f"retention {locale}: not exactly one answer in {body}")
            continue
        chosen = getattr(answer, kinds[0])
        if str(chosen.messageIdentifier) != MESSAGES[expected]:
            failures.append(f"retention {locale}: message {chosen.messageIdentifier}, expected {expected}'s")
        if expected == "v2":
            theirs = PromotionalOfferV2SignatureCreator(KEY_PEM, KEY_ID, ISSUER, BUNDLE).create_signature(
                "monthly", "WINBACK50", original)
            compare("retention promotional offer V2", chosen.promotionalOfferSignatureV2 or "", theirs, failures)
        elif expected == "v1":
            v1 = chosen.promotionalOfferSignatureV1
            if v1 is None:
                failures.append(f"retention fr-FR: no promotionalOfferSignatureV1 in {body}")
                continue
            text = apple_v1_text(v1.productId, v1.offerIdentifier, str(v1.appAccountToken or ""), str(v1.nonce),
                                 v1.timestamp)
            try:
                PUBLIC.verify(base64.b64decode(v1.encodedSignature), text, ECDSA(SHA256()))
            except InvalidSignature:
                failures.append("retention V1: receiptd's signature does not verify over Apple's text")
        elif expected == "switch" and chosen.productId != "yearly":
            failures.append(f"retention de-DE: switch to {chosen.productId}, not yearly")
    # A request whose signature does not cover its payload is refused.
    checks += 1
    header, _, signature = realtime_request(original, "en-US").split(".")
    other = realtime_request("1000000000000000", "en-US").split(".")[1]
    status, body = post_raw(port, "/v1/retention-messages/apple",
                            json.dumps({"signedPayload": f"{header}.{other}.{signature}"}).encode())
    if status != 422:
        failures.append(f"retention: a forged request answered {status} {body}")
    return checks


def main():
    port = random.randint(20000, 29999)
    scratch = tempfile.mkdtemp(prefix="receiptd-offers-")
    offers = f"{scratch}/offers.json"
    with open(offers, "w") as f:
        json.dump({"groups": {"premium": ["monthly", "yearly"]},
                   "offers": {"WINBACK50": {"audience": "lapsed", "min_days_since_expiry": 7}}}, f)
    retention = f"{scratch}/retention.json"
    with open(retention, "w") as f:
        json.dump({"rules": [
            {"name": "stay_v2", "when": {"locales": ["en"]},
             "promotional_offer": {"offer_id": "WINBACK50", "message": MESSAGES["v2"], "format": "jws"}},
            {"name": "stay_v1", "when": {"locales": ["fr"]},
             "promotional_offer": {"offer_id": "WINBACK50", "message": MESSAGES["v1"], "format": "v1"}},
            {"name": "switch", "when": {"locales": ["de"]},
             "alternate_product": {"product_id": "yearly", "message": MESSAGES["switch"]}},
            {"name": "note", "message": MESSAGES["note"]},
        ]}, f)
    env = dict(os.environ, RECEIPTD_ENVIRONMENT="development", RECEIPTD_REVENUE_CAT_PORT="0", RECEIPTD_RETENTION_FILE=retention, RECEIPTD_HTTP_PORT=str(port),
               RECEIPTD_DATABASE_PATH=f"{scratch}/db.sqlite", RECEIPTD_LOG_LEVEL="warning", RECEIPTD_HTTP_ACCESS_LOG="false",
               RECEIPTD_API_PUBLIC_KEYS="ao-public", RECEIPTD_API_SECRET_KEYS="ao-secret",
               RECEIPTD_REFRESHER_ENABLED="false", RECEIPTD_OFFERS_FILE=offers, RECEIPTD_APP_STORE_OFFERS_KEY_ID=KEY_ID,
               RECEIPTD_APP_STORE_OFFERS_ISSUER_ID=ISSUER, RECEIPTD_APP_STORE_OFFERS_PRIVATE_KEY_FILE=KEY_FILE)
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
        receipt = base64.b64encode(b"expired_voluntary:oracle").decode()
        status, _ = call(port, "/v1/receipts", {"app_user_id": "ora", "receipt_data": receipt})
        if status != 200:
            failures.append(f"the receipt was not stored: {status}")
        # The original API's signature, over the text Apple's creator signs.
        status, v1 = call(port, "/v1/subscribers/ora/offers/signatures",
                          {"product_id": "monthly", "offer_id": "WINBACK50", "application_username": "ORACLE-User"})
        checks += 1
        if status != 200:
            failures.append(f"v1: {status} {v1}")
        else:
            text = apple_v1_text("monthly", "WINBACK50", "ORACLE-User", v1["nonce"], v1["timestamp"])
            signature = base64.b64decode(v1["signature"])
            try:
                PUBLIC.verify(signature, text, ECDSA(SHA256()))
            except InvalidSignature:
                failures.append("v1: receiptd's signature does not verify over Apple's text")
            checks += 1
            try:  # the oracle can say no
                PUBLIC.verify(signature, text + b"x", ECDSA(SHA256()))
                failures.append("v1: a signature verified over other text")
            except InvalidSignature:
                pass
        # StoreKit's signed requests, beside Apple's for the same inputs. The transaction named is
        # one of ora's (receiptd signs nothing for a transaction the customer does not hold).
        held = held_originals(port)
        ora_transaction = held[0] if held else "2000000000000042"
        status, v2 = call(port, "/v1/subscribers/ora/offers/signatures",
                          {"product_id": "monthly", "offer_id": "WINBACK50", "format": "jws", "transaction_id": ora_transaction})
        checks += 1
        if status != 200:
            failures.append(f"jws (it was asked once already, and the rule allows any number): {status} {v2}")
        else:
            theirs = PromotionalOfferV2SignatureCreator(KEY_PEM, KEY_ID, ISSUER, BUNDLE).create_signature(
                "monthly", "WINBACK50", ora_transaction)
            compare("promotional offer", v2["signature"], theirs, failures)
        status, intro = call(port, "/v1/subscribers/ora/offers/introductory-eligibility",
                             {"product_id": "yearly", "transaction_id": ora_transaction})
        checks += 1
        if status != 200:
            failures.append(f"introductory eligibility: {status} {intro}")
        else:
            theirs = IntroductoryOfferEligibilitySignatureCreator(KEY_PEM, KEY_ID, ISSUER, BUNDLE).create_signature(
                "yearly", intro["allowed"], ora_transaction)
            compare("introductory eligibility", intro["signature"], theirs, failures)
            checks += 1
            tampered = intro["signature"][:-4] + ("AAAA" if not intro["signature"].endswith("AAAA") else "BBBB")
            try:
                jwt.decode(tampered, PUBLIC, algorithms=["ES256"], audience="introductory-offer-eligibility")
                failures.append("a tampered JWS verified")
            except jwt.PyJWTError:
                pass
        checks += retention_checks(port, failures)
    finally:
        service.terminate()
        service.wait(timeout=20)
    for line in failures:
        print("FAIL:", line)
    print(f"apple offers: {max(0, checks - len(failures))} passed, {len(failures)} failed")
    if failures:
        print(open(f"{scratch}/receiptd.log").read()[-4000:])
    shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
