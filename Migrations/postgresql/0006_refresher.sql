-- Issue 6: the background refresher re-validates stored latest receipts of subscriptions that
-- expired or are in billing retry or grace since they were last checked. One row per subscription
-- it has looked at; everything it needs to resume after a restart.
CREATE TABLE refresh_checks (
    original_transaction_id TEXT PRIMARY KEY NOT NULL,
    -- When Apple last answered about it (any answer but "unavailable").
    checked_at BIGINT,
    -- valid, invalid_receipt, wrong_app, no_owner, unavailable, misconfigured.
    outcome TEXT,
    -- Consecutive attempts Apple did not answer; the next one waits until next_attempt_at.
    failures BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    -- Claimed by a refresher until then: never two refreshes of one subscription at once, and a
    -- claim left by a killed process simply runs out.
    lease_until BIGINT
);

-- The refresher's scan reads each subscription's latest expiry: from the index alone. It serves
-- every lookup by original transaction too, so it replaces the single-column index.
CREATE INDEX transactions_by_original_expiry ON transactions (original_transaction_id, expires_date);
DROP INDEX transactions_by_original;
