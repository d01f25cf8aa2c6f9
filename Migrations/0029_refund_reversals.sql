-- Issue 43: a refund Apple reversed (REFUND_REVERSED: the transaction is stated again without
-- its revocation) is history, not nothing: when the refund had taken effect and when a statement
-- without it arrived, kept by the upsert that drops the revocation (Sources/Storage/ReceiptStore.swift),
-- so the events tell both the refund and its reversal (Docs/state.md "Refunds").
ALTER TABLE transactions ADD COLUMN reversed_refund_date INTEGER;
ALTER TABLE transactions ADD COLUMN refund_reversed_at INTEGER;
