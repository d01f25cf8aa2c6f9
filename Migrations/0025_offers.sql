-- Issue 41: offers decided on the server (Docs/offers.md). Every signature receiptd issues for a
-- customer is an audited fact: who it was for, which offer of which product, in which form, by
-- which key, when, and who asked. An introductory-offer decision is signed either way; `allowed`
-- says which. Rows go with the person on erasure and are part of their export.
CREATE TABLE offer_signatures (
    id INTEGER PRIMARY KEY,
    app_user_id TEXT NOT NULL,
    -- promotional or introductory.
    kind TEXT NOT NULL CHECK (kind IN ('promotional', 'introductory')),
    product_id TEXT NOT NULL,
    -- The promotional offer's id; NULL for an introductory decision.
    offer_id TEXT,
    -- v1 (the original API's signature) or jws (StoreKit's 2025 signed request).
    format TEXT NOT NULL CHECK (format IN ('v1', 'jws')),
    key_id TEXT NOT NULL,
    nonce TEXT NOT NULL,
    allowed INTEGER NOT NULL,
    -- `key:` and 12 hex digits of the asking API key's SHA-256.
    requested_by TEXT NOT NULL,
    issued_at INTEGER NOT NULL
) STRICT;
CREATE INDEX offer_signatures_by_user ON offer_signatures (app_user_id, offer_id, issued_at);
