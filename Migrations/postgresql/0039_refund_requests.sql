-- Issue 61: see Migrations/0039_refund_requests.sql.
CREATE TABLE refund_requests (
    notification_id BIGINT PRIMARY KEY,
    original_transaction_id TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    at BIGINT NOT NULL,
    answered_at BIGINT,
    answer TEXT,
    reason TEXT
);
CREATE INDEX refund_requests_by_purchase ON refund_requests (original_transaction_id);

INSERT INTO refund_requests (notification_id, original_transaction_id, transaction_id, kind, at)
SELECT id, original_transaction_id, transaction_id,
    CASE type WHEN 'CONSUMPTION_REQUEST' THEN 'requested' WHEN 'REFUND' THEN 'granted'
        WHEN 'REFUND_DECLINED' THEN 'declined' ELSE 'reversed' END,
    coalesce(signed_at, received_at)
FROM notifications
WHERE version = 2 AND type IN ('CONSUMPTION_REQUEST', 'REFUND', 'REFUND_DECLINED', 'REFUND_REVERSED')
    AND original_transaction_id IS NOT NULL AND transaction_id IS NOT NULL;
