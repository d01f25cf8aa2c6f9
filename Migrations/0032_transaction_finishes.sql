-- Issue 43: Finish Transaction (App Store Server API 1.20), when receiptd manages the delivery of
-- consumables (`appStore.finishConsumables`): each consumable stored for an app user is queued
-- here in the same transaction as its save, and a worker tells Apple it was delivered, under a
-- lease, with backoff, across restarts (Sources/ReceiptCore/FinishTransactions.swift).
CREATE TABLE transaction_finishes (
    transaction_id TEXT PRIMARY KEY NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    queued_at INTEGER NOT NULL,
    -- When the next call is due; NULL once finished or given up.
    due_at INTEGER,
    lease_until INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    finished_at INTEGER,
    -- finished, or refused (Apple will never take it: not found, not a consumable).
    outcome TEXT
) STRICT;
CREATE INDEX transaction_finishes_due ON transaction_finishes (due_at) WHERE due_at IS NOT NULL;
