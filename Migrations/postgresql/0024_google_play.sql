-- Issue 40: Google Play purchases beside the App Store's: see Migrations/0024_google_play.sql.
ALTER TABLE pending_renewal_info ADD COLUMN store_state TEXT;
ALTER TABLE pending_renewal_info ADD COLUMN auto_resume_date BIGINT;
ALTER TABLE renewal_history ADD COLUMN store_state TEXT;
ALTER TABLE renewal_history ADD COLUMN auto_resume_date BIGINT;

CREATE TABLE play_tokens (
    reference TEXT PRIMARY KEY,
    purchase_token TEXT NOT NULL,
    package_name TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('subscription', 'product')),
    -- The product of its first line item: the acknowledge and consume calls name it.
    product_id TEXT NOT NULL,
    chain TEXT NOT NULL,
    -- The reference of the token it replaced (`linkedPurchaseToken`).
    linked_reference TEXT,
    first_seen_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ack_due_at BIGINT,
    ack_attempts BIGINT NOT NULL DEFAULT 0,
    ack_last_error TEXT,
    acknowledged_at BIGINT,
    consume_due_at BIGINT,
    consume_attempts BIGINT NOT NULL DEFAULT 0,
    consume_last_error TEXT,
    consumed_at BIGINT,
    lease_until BIGINT
);
CREATE INDEX play_tokens_by_chain ON play_tokens (chain);
CREATE INDEX play_tokens_by_linked ON play_tokens (linked_reference) WHERE linked_reference IS NOT NULL;
CREATE INDEX play_tokens_ack_due ON play_tokens (ack_due_at) WHERE ack_due_at IS NOT NULL;
CREATE INDEX play_tokens_consume_due ON play_tokens (consume_due_at) WHERE consume_due_at IS NOT NULL;

CREATE TABLE play_notifications (
    message_id TEXT PRIMARY KEY,
    package_name TEXT NOT NULL,
    type TEXT NOT NULL,
    token_reference TEXT,
    event_time BIGINT NOT NULL,
    received_at BIGINT NOT NULL,
    outcome TEXT NOT NULL,
    app_user_id TEXT
);
CREATE INDEX play_notifications_by_user ON play_notifications (app_user_id) WHERE app_user_id IS NOT NULL;
CREATE INDEX play_notifications_by_time ON play_notifications (received_at);

CREATE TABLE play_catch_up (
    package_name TEXT PRIMARY KEY,
    voided_until BIGINT NOT NULL
);
