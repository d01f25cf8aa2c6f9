-- Issue 41: Retention Messaging answers: see Migrations/0027_retention_answers.sql.
CREATE TABLE retention_answers (
    request_identifier TEXT PRIMARY KEY,
    app_user_id TEXT,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    user_locale TEXT NOT NULL,
    rule TEXT,
    kind TEXT,
    message_identifier TEXT,
    offer_id TEXT,
    decision TEXT NOT NULL,
    period_end BIGINT,
    response_json TEXT NOT NULL,
    answered_at BIGINT NOT NULL
);
CREATE INDEX retention_answers_by_user ON retention_answers (app_user_id);
CREATE INDEX retention_answers_by_purchase ON retention_answers (original_transaction_id);
CREATE INDEX retention_answers_by_time ON retention_answers (answered_at);
