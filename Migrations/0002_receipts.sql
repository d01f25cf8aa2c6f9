-- What Apple said about receipts (issue 3). Times are integer milliseconds since the Unix epoch, UTC;
-- flags are 0/1; raw_json is the object exactly as Apple sent it, so state can be re-derived later.

-- Every purchase, renewal and restore, one row per transaction_id (apple-protocols.md §1.6).
CREATE TABLE transactions (
    transaction_id TEXT PRIMARY KEY NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    purchase_date INTEGER,
    original_purchase_date INTEGER,
    expires_date INTEGER,
    cancellation_date INTEGER,
    cancellation_reason TEXT,
    quantity INTEGER,
    is_trial_period INTEGER NOT NULL CHECK (is_trial_period IN (0, 1)),
    is_in_intro_offer_period INTEGER NOT NULL CHECK (is_in_intro_offer_period IN (0, 1)),
    is_upgraded INTEGER NOT NULL CHECK (is_upgraded IN (0, 1)),
    ownership_type TEXT,
    subscription_group_id TEXT,
    web_order_line_item_id TEXT,
    promotional_offer_id TEXT,
    offer_code_ref_name TEXT,
    raw_json TEXT NOT NULL,
    first_seen_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX transactions_by_original ON transactions (original_transaction_id);

-- What Apple will do at the next renewal, per subscription (§1.7).
CREATE TABLE pending_renewal_info (
    original_transaction_id TEXT PRIMARY KEY NOT NULL,
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
    raw_json TEXT NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

-- The newest receipt seen for each subscription, to re-validate it later without the app.
CREATE TABLE latest_receipts (
    original_transaction_id TEXT PRIMARY KEY NOT NULL,
    receipt_data TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    updated_at INTEGER NOT NULL
) STRICT;

-- Which app user holds each original transaction now.
CREATE TABLE ownership (
    original_transaction_id TEXT PRIMARY KEY NOT NULL,
    app_user_id TEXT NOT NULL REFERENCES subscribers (app_user_id),
    since INTEGER NOT NULL
) STRICT;
CREATE INDEX ownership_by_user ON ownership (app_user_id);

-- Every change of holder, the first one included (from_app_user_id NULL).
CREATE TABLE ownership_transfers (
    id INTEGER PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    from_app_user_id TEXT,
    to_app_user_id TEXT NOT NULL,
    at INTEGER NOT NULL
) STRICT;
CREATE INDEX ownership_transfers_by_original ON ownership_transfers (original_transaction_id);

-- One row per verification with Apple: never the receipt, never the shared secret.
CREATE TABLE verifications (
    id INTEGER PRIMARY KEY,
    app_user_id TEXT,
    environment TEXT CHECK (environment IN ('production', 'sandbox')),
    apple_status INTEGER,
    outcome TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    latency_ms INTEGER NOT NULL,
    at INTEGER NOT NULL
) STRICT;
