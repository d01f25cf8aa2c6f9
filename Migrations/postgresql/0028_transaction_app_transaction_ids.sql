-- Issue 43: each transaction's `appTransactionId`: see Migrations/0028_transaction_app_transaction_ids.sql.
ALTER TABLE transactions ADD COLUMN app_transaction_id TEXT;
UPDATE transactions SET app_transaction_id = raw_json::jsonb ->> 'appTransactionId'
WHERE raw_json LIKE '%"appTransactionId"%';
CREATE INDEX transactions_by_app_transaction_id ON transactions (app_transaction_id) WHERE app_transaction_id IS NOT NULL;
