-- Issue 5: App Store Server Notifications (V1 and V2) and StoreKit 2 signed transactions.
-- Times are integer milliseconds since the Unix epoch, UTC.

-- Every notification Apple delivered, stored once before it is acknowledged. dedupe_key is V2's
-- notificationUUID, or for V1 (which has no id) "v1:" and the SHA-256 of the body with its password
-- removed. body is what Apple sent, V1's password replaced by "<redacted>". outcome: applied,
-- unchanged, recorded, pending_owner (no user holds the purchase yet) or attached (its user appeared).
CREATE TABLE notifications (
    id INTEGER PRIMARY KEY,
    dedupe_key TEXT NOT NULL UNIQUE,
    version INTEGER NOT NULL CHECK (version IN (1, 2)),
    type TEXT NOT NULL,
    subtype TEXT,
    environment TEXT,
    bundle_id TEXT,
    original_transaction_id TEXT,
    transaction_id TEXT,
    apple_status INTEGER,
    app_user_id TEXT,
    outcome TEXT NOT NULL,
    signed_at INTEGER,
    received_at INTEGER NOT NULL,
    body TEXT NOT NULL
) STRICT;
CREATE INDEX notifications_by_received ON notifications (received_at, id);
CREATE INDEX notifications_waiting ON notifications (original_transaction_id) WHERE outcome = 'pending_owner';

-- When Apple stated a row's facts: a JWS's signedDate, else when receiptd received them. A row is
-- never overwritten by an older statement (notifications can arrive out of order, retried for days).
ALTER TABLE transactions ADD COLUMN stated_at INTEGER NOT NULL DEFAULT 0;
UPDATE transactions SET stated_at = updated_at;
ALTER TABLE pending_renewal_info ADD COLUMN stated_at INTEGER NOT NULL DEFAULT 0;
UPDATE pending_renewal_info SET stated_at = updated_at;

-- StoreKit's appAccountToken: the UUID an app chose for its user at purchase, to find that user.
ALTER TABLE transactions ADD COLUMN app_account_token TEXT;
CREATE INDEX transactions_by_account_token ON transactions (app_account_token) WHERE app_account_token IS NOT NULL;
