-- Issue 41: StoreKit's AppTransaction per person (Docs/offers.md "AppTransaction"): Apple's signed
-- statement that an Apple Account got the app. `app_transaction_id` names that account and app
-- for good: it is a customer's `transactionId` in offers when they bought nothing, and the same
-- one under several app user ids is one Apple Account shared between them (reported).
CREATE TABLE app_transactions (
    app_user_id TEXT NOT NULL,
    app_transaction_id TEXT NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    original_application_version TEXT,
    original_purchase_date INTEGER,
    original_platform TEXT,
    -- Apple's payload as verified, without its signedDate.
    raw_json TEXT NOT NULL,
    first_seen_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_user_id, app_transaction_id)
) STRICT;
CREATE INDEX app_transactions_by_id ON app_transactions (app_transaction_id);
