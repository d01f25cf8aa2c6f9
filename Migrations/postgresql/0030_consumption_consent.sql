-- Issue 43: customers who withdrew their consent to share consumption data: see
-- Migrations/0030_consumption_consent.sql.
CREATE TABLE consumption_consent_rescinded (
    app_transaction_id TEXT PRIMARY KEY NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    rescinded_at BIGINT NOT NULL,
    notification_id BIGINT NOT NULL
);
