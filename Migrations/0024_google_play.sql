-- Issue 40: Google Play purchases beside the App Store's (Docs/google-play.md).
--
-- A Play subscription's renewal facts carry Google's own state (`subscriptionState`,
-- Entitlements.Renewal.storeState) and when a pause ends; Apple's rows leave both NULL.
ALTER TABLE pending_renewal_info ADD COLUMN store_state TEXT;
ALTER TABLE pending_renewal_info ADD COLUMN auto_resume_date INTEGER;
ALTER TABLE renewal_history ADD COLUMN store_state TEXT;
ALTER TABLE renewal_history ADD COLUMN auto_resume_date INTEGER;

-- One row per Play purchase token receiptd has verified. The token is kept here only (facts name
-- it by `reference`, GooglePlay.PurchaseTokenReference) to ask Google again: the refresher, a
-- notification, the acknowledgement. `chain` is the subscription it belongs to (the original
-- transaction id of its facts), through `linkedPurchaseToken`.
--
-- Google refunds a purchase not acknowledged within three days, so the acknowledgement is a
-- durable queue: `ack_due_at` is set when a purchase is stored unacknowledged and cleared when
-- Google has it; a worker claims a due row by moving it past `lease_until` (a process that dies
-- mid-call leaves a row that falls due again), and a failure sets the next attempt by backoff.
-- Consumption (consumables, when the operator configures it) queues the same way.
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
    first_seen_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ack_due_at INTEGER,
    ack_attempts INTEGER NOT NULL DEFAULT 0,
    ack_last_error TEXT,
    acknowledged_at INTEGER,
    consume_due_at INTEGER,
    consume_attempts INTEGER NOT NULL DEFAULT 0,
    consume_last_error TEXT,
    consumed_at INTEGER,
    lease_until INTEGER
) STRICT;
CREATE INDEX play_tokens_by_chain ON play_tokens (chain);
CREATE INDEX play_tokens_by_linked ON play_tokens (linked_reference) WHERE linked_reference IS NOT NULL;
CREATE INDEX play_tokens_ack_due ON play_tokens (ack_due_at) WHERE ack_due_at IS NOT NULL;
CREATE INDEX play_tokens_consume_due ON play_tokens (consume_due_at) WHERE consume_due_at IS NOT NULL;

-- Real-time developer notifications as Pub/Sub pushed them: one row per message, so a message
-- pushed again (Pub/Sub delivers at least once) is applied once. The token is named by its
-- reference only; the purchase's state is asked of Google again, never read from the message.
CREATE TABLE play_notifications (
    message_id TEXT PRIMARY KEY,
    package_name TEXT NOT NULL,
    -- SUBSCRIPTION_RENEWED, ONE_TIME_PRODUCT_PURCHASED, VOIDED_PURCHASE, TEST, …
    type TEXT NOT NULL,
    token_reference TEXT,
    event_time INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    -- applied, unchanged, pending_owner, owner_conflict, unknown_token, test.
    outcome TEXT NOT NULL,
    app_user_id TEXT
) STRICT;
CREATE INDEX play_notifications_by_user ON play_notifications (app_user_id) WHERE app_user_id IS NOT NULL;
CREATE INDEX play_notifications_by_time ON play_notifications (received_at);

-- The Voided Purchases API's catch-up: per app, until when it has been read (the next read starts
-- a little before, and never more than 30 days back, which is all Google keeps).
CREATE TABLE play_catch_up (
    package_name TEXT PRIMARY KEY,
    voided_until INTEGER NOT NULL
) STRICT;
