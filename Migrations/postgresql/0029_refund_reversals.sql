-- Issue 43: a refund Apple reversed: see Migrations/0029_refund_reversals.sql.
ALTER TABLE transactions ADD COLUMN reversed_refund_date BIGINT;
ALTER TABLE transactions ADD COLUMN refund_reversed_at BIGINT;
