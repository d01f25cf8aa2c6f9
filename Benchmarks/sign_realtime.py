#!/usr/bin/env python3
"""Writes COUNT Retention Messaging real-time request bodies (one `{"signedPayload"}` per line)
for the retention benchmark, signed as Apple signs them (sign_notifications.py's signer: Apple's
test leaf key, x5c chaining to the test CA). Each asks about one of the original transaction ids
in ORIGINALS (one per line), in turn, with a request identifier of its own, so every request is
decided and recorded anew.
Usage: sign_realtime.py ORIGINALS COUNT OUTFILE
"""
import json
import sys
import time
import uuid

from sign_notifications import sign


def main():
    originals = [line.strip() for line in open(sys.argv[1]) if line.strip()]
    count, out = int(sys.argv[2]), sys.argv[3]
    now = int(time.time() * 1000)
    with open(out, "w") as f:
        for i in range(count):
            payload = {
                "originalTransactionId": originals[i % len(originals)], "appAppleId": 1234567890, "productId": "monthly",
                "userLocale": "en-US", "requestIdentifier": str(uuid.uuid4()), "signedDate": now,
                "environment": "Production",
            }
            f.write(json.dumps({"signedPayload": sign(payload)}) + "\n")


if __name__ == "__main__":
    main()
