-- Issue 41: what receiptd answered Apple's Retention Messaging real-time requests (Docs/retention.md).
-- One row per Apple request (`request_identifier`; Apple's retries carry the same): who, which
-- subscription, the rule that chose and its answer, and when the subscription's period ended then,
-- so whether the customer stayed (a later period exists) is read from the transactions afterwards.
CREATE TABLE retention_answers (
    request_identifier TEXT PRIMARY KEY,
    -- NULL when no one held the purchase when Apple asked.
    app_user_id TEXT,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    user_locale TEXT NOT NULL,
    -- The rule that chose (NULL: none held, Apple showed its default message) and its answer.
    rule TEXT,
    kind TEXT,
    message_identifier TEXT,
    offer_id TEXT,
    -- The explanation's rule id: retention_rule_matched, no_rule_matched, subscription_unknown.
    decision TEXT NOT NULL,
    period_end INTEGER,
    -- The body answered (Apple's RealtimeResponseBody): Apple's retry gets it again, not a second offer.
    response_json TEXT NOT NULL,
    answered_at INTEGER NOT NULL
) STRICT;
CREATE INDEX retention_answers_by_user ON retention_answers (app_user_id);
CREATE INDEX retention_answers_by_purchase ON retention_answers (original_transaction_id);
CREATE INDEX retention_answers_by_time ON retention_answers (answered_at);
