-- Issue 61: the App Store's refund requests as Apple told them, for the refund_requests chart
-- (Docs/analytics.md). A customer asks Apple for a refund; Apple asks the app for consumption
-- information (CONSUMPTION_REQUEST, V2) and waits 12 hours for it; then it grants the refund
-- (REFUND), declines it (REFUND_DECLINED), or later reverses a refund it granted (REFUND_REVERSED).
-- One row per such notification, `kind` requested, granted, declined or reversed, `at` Apple's
-- signedDate. A request's row also records receiptd's answer (Send Consumption Information):
-- `answer` is `sent`, `consent_rescinded` (nothing sent: the customer withdrew consent), or the
-- failure's name; `answered_at` when it was sent; `reason` the customer's, as Apple states it on a
-- request (`consumptionRequestReason`: UNINTENDED_PURCHASE, FULFILLMENT_ISSUE,
-- UNSATISFIED_WITH_PURCHASE, LEGAL, OTHER; unknown for the requests stored before this table).
-- Keyed by the purchase like its transactions, so its holder's charts read it and an erasure of
-- the purchase deletes it.
CREATE TABLE refund_requests (
    notification_id INTEGER PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at INTEGER NOT NULL,
    answered_at INTEGER,
    answer TEXT,
    reason TEXT
) STRICT;
CREATE INDEX refund_requests_by_purchase ON refund_requests (original_transaction_id);

INSERT INTO refund_requests (notification_id, original_transaction_id, transaction_id, kind, at)
SELECT id, original_transaction_id, transaction_id,
    CASE type WHEN 'CONSUMPTION_REQUEST' THEN 'requested' WHEN 'REFUND' THEN 'granted'
        WHEN 'REFUND_DECLINED' THEN 'declined' ELSE 'reversed' END,
    coalesce(signed_at, received_at)
FROM notifications
WHERE version = 2 AND type IN ('CONSUMPTION_REQUEST', 'REFUND', 'REFUND_DECLINED', 'REFUND_REVERSED')
    AND original_transaction_id IS NOT NULL AND transaction_id IS NOT NULL;
