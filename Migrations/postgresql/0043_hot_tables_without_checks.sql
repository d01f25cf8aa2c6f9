-- Issue 62: the CHECK constraints of the tables every save writes are dropped on PostgreSQL, where
-- each statement's executor read every constraint's expression again and ran it on each row
-- (`ExecConstraints`: 3.8 % of the machine's samples under a POST load). receiptd's own code
-- keeps what they kept, and a test holds it to it on both databases
-- (ReceiptStoreTests.everyHotRowKeepsWhatItsDroppedChecksKept):
-- - environment is `production` or `sandbox`: every writer of these tables takes a
--   `StoreEnvironment` (Sources/Entitlements/StoreEnvironment.swift), whose two words they are;
-- - the flags are 0 or 1: written from a `Bool` (ReceiptStore.purchaseValues, renewalValues,
--   renewalCommitmentValues).
-- Kept: transactions' price >= 0 and price_source, which no type of receiptd's guarantees (a
-- Play price's units are signed; `price_table` is a price source the table must not hold).
-- SQLite keeps them all (its checks run in-process, without a statement of their own), so every
-- test on SQLite still fails at the first row that breaks them.
ALTER TABLE transactions
    DROP CONSTRAINT transactions_environment_check,
    DROP CONSTRAINT transactions_is_trial_period_check,
    DROP CONSTRAINT transactions_is_in_intro_offer_period_check,
    DROP CONSTRAINT transactions_is_upgraded_check;
ALTER TABLE pending_renewal_info
    DROP CONSTRAINT pending_renewal_info_auto_renew_status_check,
    DROP CONSTRAINT pending_renewal_info_is_in_billing_retry_period_check,
    DROP CONSTRAINT pending_renewal_info_environment_check,
    DROP CONSTRAINT pending_renewal_info_commitment_auto_renew_status_check;
ALTER TABLE renewal_history
    DROP CONSTRAINT renewal_history_auto_renew_status_check,
    DROP CONSTRAINT renewal_history_is_in_billing_retry_period_check,
    DROP CONSTRAINT renewal_history_environment_check,
    DROP CONSTRAINT renewal_history_commitment_auto_renew_status_check;
ALTER TABLE latest_receipts DROP CONSTRAINT latest_receipts_environment_check;
ALTER TABLE verifications DROP CONSTRAINT verifications_environment_check;
