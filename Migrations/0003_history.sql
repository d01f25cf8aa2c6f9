-- Issue 4: what receiptd needs to date changes, keep a history and version the subscriber document.
-- Times are integer milliseconds since the Unix epoch, UTC.

-- The subscriber document's version: +1 each time its content changes. state_hash fingerprints the
-- content it was last computed with (FNV-1a 64 of the document without request_date and version).
ALTER TABLE subscribers ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subscribers ADD COLUMN state_hash TEXT;

-- Every pending_renewal_info snapshot as first seen: the row is written only when Apple's object
-- changed, so the history dates each change (auto-renew off, a billing issue, a grace period).
CREATE TABLE renewal_history (
    id INTEGER PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    observed_at INTEGER NOT NULL,
    product_id TEXT,
    auto_renew_product_id TEXT,
    auto_renew_status INTEGER CHECK (auto_renew_status IN (0, 1)),
    expiration_intent INTEGER,
    grace_period_expires_date INTEGER,
    is_in_billing_retry_period INTEGER CHECK (is_in_billing_retry_period IN (0, 1)),
    price_consent_status TEXT,
    price_increase_status TEXT,
    offer_code_ref_name TEXT,
    promotional_offer_id TEXT,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    raw_json TEXT NOT NULL
) STRICT;
CREATE INDEX renewal_history_by_original ON renewal_history (original_transaction_id, observed_at);

-- Databases from before this migration: their current snapshots start the history.
INSERT INTO renewal_history (original_transaction_id, observed_at, product_id, auto_renew_product_id, auto_renew_status,
    expiration_intent, grace_period_expires_date, is_in_billing_retry_period, price_consent_status, price_increase_status,
    offer_code_ref_name, promotional_offer_id, environment, raw_json)
SELECT original_transaction_id, updated_at, product_id, auto_renew_product_id, auto_renew_status, expiration_intent,
    grace_period_expires_date, is_in_billing_retry_period, price_consent_status, price_increase_status, offer_code_ref_name,
    promotional_offer_id, environment, raw_json
FROM pending_renewal_info;

-- Lifecycle events derived from the facts above (Sources/Entitlements/History.swift). event_key is
-- deterministic, so deriving again inserts nothing twice.
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    app_user_id TEXT NOT NULL REFERENCES subscribers (app_user_id),
    event_key TEXT NOT NULL,
    type TEXT NOT NULL,
    at INTEGER NOT NULL,
    product_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    transaction_id TEXT,
    facts_json TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    UNIQUE (app_user_id, event_key)
) STRICT;
CREATE INDEX events_by_user_time ON events (app_user_id, at, id);

-- A subscriber's transfers are read with every document: by purchase (the index of 0002), and by
-- either side of the move.
CREATE INDEX ownership_transfers_by_from ON ownership_transfers (from_app_user_id);
CREATE INDEX ownership_transfers_by_to ON ownership_transfers (to_app_user_id);
