-- `receiptd backfill-prices` (Docs/analytics.md): when Get Transaction History was last asked
-- about this transaction's purchase (epoch ms). A purchase is asked once, so a backfill that
-- stops part-way resumes where it left off and one run again asks only about new purchases.
ALTER TABLE transactions ADD COLUMN price_history_asked_at INTEGER;
CREATE INDEX transactions_unpriced ON transactions (original_transaction_id)
    WHERE price_history_asked_at IS NULL AND (price_source IS NULL OR price_source = 'client');
