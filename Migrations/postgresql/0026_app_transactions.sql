-- Issue 41: StoreKit's AppTransaction per person: see Migrations/0026_app_transactions.sql.
CREATE TABLE app_transactions (
    app_user_id TEXT NOT NULL,
    app_transaction_id TEXT NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    original_application_version TEXT,
    original_purchase_date BIGINT,
    original_platform TEXT,
    raw_json TEXT NOT NULL,
    first_seen_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (app_user_id, app_transaction_id)
);
CREATE INDEX app_transactions_by_id ON app_transactions (app_transaction_id);
