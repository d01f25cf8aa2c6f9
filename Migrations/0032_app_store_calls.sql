-- Issue 43: calls receiptd owes the App Store Server API, queued in the same transaction as the
-- save that makes them due and made by a worker under a lease, with backoff, across restarts
-- (Sources/ReceiptCore/AppStoreCalls.swift):
--   finish_transaction (API 1.20), when receiptd manages the delivery of consumables
--     (`appStore.finishConsumables`): subject the transaction id;
--   set_app_account_token (API 1.16), when receiptd tells Apple whose a purchase is
--     (`appStore.setAppAccountTokens`): subject the original transaction id, argument the token.
CREATE TABLE app_store_calls (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('finish_transaction', 'set_app_account_token')),
    subject TEXT NOT NULL,
    argument TEXT,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    queued_at INTEGER NOT NULL,
    -- When the next call is due; NULL once made or given up.
    due_at INTEGER,
    lease_until INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    finished_at INTEGER,
    -- done, or refused (Apple will never take it: the transaction unknown, the id malformed).
    outcome TEXT,
    UNIQUE (kind, subject)
) STRICT;
CREATE INDEX app_store_calls_due ON app_store_calls (due_at) WHERE due_at IS NOT NULL;
-- Each person's appAccountToken (a UUID receiptd made), told to Apple for their purchases.
ALTER TABLE subscribers ADD COLUMN app_account_token TEXT;
CREATE UNIQUE INDEX subscribers_by_app_account_token ON subscribers (app_account_token) WHERE app_account_token IS NOT NULL;
