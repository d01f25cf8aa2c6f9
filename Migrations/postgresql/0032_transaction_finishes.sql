-- Issue 43: Finish Transaction: see Migrations/0032_transaction_finishes.sql.
CREATE TABLE transaction_finishes (
    transaction_id TEXT PRIMARY KEY NOT NULL,
    bundle_id TEXT NOT NULL,
    environment TEXT NOT NULL CHECK (environment IN ('production', 'sandbox')),
    queued_at BIGINT NOT NULL,
    due_at BIGINT,
    lease_until BIGINT,
    attempts BIGINT NOT NULL DEFAULT 0,
    last_error TEXT,
    finished_at BIGINT,
    outcome TEXT
);
CREATE INDEX transaction_finishes_due ON transaction_finishes (due_at) WHERE due_at IS NOT NULL;
