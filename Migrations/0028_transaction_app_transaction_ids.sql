-- Issue 43: each transaction's `appTransactionId` (Apple's id of the Apple Account that got the
-- app, on every signed transaction since 2025), kept as a fact: shown in the document and the
-- export, and how a `RESCIND_CONSENT` notification finds the purchases it is about. Rows stored
-- before are filled from the payload they were stored with; verifyReceipt's rows have none.
ALTER TABLE transactions ADD COLUMN app_transaction_id TEXT;
UPDATE transactions SET app_transaction_id = json_extract(raw_json, '$.appTransactionId')
WHERE raw_json LIKE '%"appTransactionId"%' AND json_valid(raw_json);
CREATE INDEX transactions_by_app_transaction_id ON transactions (app_transaction_id) WHERE app_transaction_id IS NOT NULL;
