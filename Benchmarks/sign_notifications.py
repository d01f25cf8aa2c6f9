#!/usr/bin/env python3
"""Writes COUNT signed App Store Server Notifications V2 (one JSON body per line) for the
notifications benchmark, signed as Apple signs them (ES256, raw R||S, x5c of three certificates)
with Apple's published test leaf key, which chains to Sources/ReceiptTesting/Fixtures/SignedData/testCA.der.

Each body is a DID_RENEW for a purchase of its own, carrying a signed transaction and signed
renewal info: three JWS to verify per notification. Needs PyPI's `cryptography`.
Usage: sign_notifications.py COUNT OUTFILE
"""
import base64
import json
import sys
import time
import uuid
from pathlib import Path

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

fixtures = Path(__file__).resolve().parent.parent / "Sources/ReceiptTesting/Fixtures/SignedData"
key = serialization.load_pem_private_key((fixtures / "testLeaf.key").read_bytes(), password=None)


def der_base64(pem_name):
    """The base64 between BEGIN and END (the files also hold openssl's text dump before it)."""
    text = (fixtures / pem_name).read_text()
    block = text.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    return "".join(block.split())


x5c = [der_base64(n) for n in ("testLeaf.pem", "testIntermediate.pem", "testCA.pem")]
header = base64.urlsafe_b64encode(json.dumps({"alg": "ES256", "x5c": x5c}).encode()).rstrip(b"=")


def sign(payload):
    body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).rstrip(b"=")
    signing_input = header + b"." + body
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    signature = base64.urlsafe_b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big")).rstrip(b"=")
    return (signing_input + b"." + signature).decode()


def main():
    count, out = int(sys.argv[1]), sys.argv[2]
    now = int(time.time() * 1000)
    day = 86_400_000
    with open(out, "w") as f:
        for i in range(count):
            original = f"bench-o{i}"
            transaction = {
                "transactionId": f"bench-t{i}", "originalTransactionId": original, "bundleId": "com.example.app",
                "productId": "monthly", "purchaseDate": now - day, "originalPurchaseDate": now - day,
                "expiresDate": now + 29 * day, "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
                "environment": "Sandbox", "signedDate": now,
            }
            renewal = {
                "originalTransactionId": original, "productId": "monthly", "autoRenewProductId": "monthly",
                "autoRenewStatus": 1, "environment": "Sandbox", "signedDate": now,
            }
            notification = {
                "notificationType": "DID_RENEW", "notificationUUID": str(uuid.uuid4()), "version": "2.0", "signedDate": now,
                "data": {
                    "bundleId": "com.example.app", "environment": "Sandbox", "status": 1,
                    "signedTransactionInfo": sign(transaction), "signedRenewalInfo": sign(renewal),
                },
            }
            f.write(json.dumps({"signedPayload": sign(notification)}) + "\n")


if __name__ == "__main__":
    main()
