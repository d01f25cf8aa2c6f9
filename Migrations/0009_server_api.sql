-- Issue 19: the App Store Server API.

-- Shadow mode (appStore.verifier = shadow): each receipt verified by verifyReceipt is also asked of
-- the Server API, and the two documents derived from the two answers are compared. A row per
-- comparison that found a difference; `differences` is a JSON array of
-- {"path", "verify_receipt", "server_api"}. Read by GET /v1/admin/shadow-diffs.
CREATE TABLE shadow_diffs (
    id INTEGER PRIMARY KEY,
    app_user_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    environment TEXT,
    differences TEXT NOT NULL,
    at INTEGER NOT NULL
) STRICT;

-- Catch-up (Get Notification History) starts from the newest V2 notification stored per app and
-- environment, by Apple's signedDate.
CREATE INDEX notifications_by_signed ON notifications (bundle_id, environment, signed_at) WHERE version = 2;
