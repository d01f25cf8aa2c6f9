-- When Get Transaction History was last asked about this purchase: see Migrations/0017_price_history.sql.
ALTER TABLE transactions ADD COLUMN price_history_asked_at BIGINT;
CREATE INDEX transactions_unpriced ON transactions (original_transaction_id)
    WHERE price_history_asked_at IS NULL AND (price_source IS NULL OR price_source = 'client');
