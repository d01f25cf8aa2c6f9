-- Issue 62: a compare-and-set that goes with the commit, unanswered (ReceiptStore.settleInSave),
-- must fail the transaction itself when it changes no row: a client that checked the count
-- afterwards would find the commit already made. The statement passes its count here, and a
-- count other than one raises a serialization failure (SQLSTATE 40001), which the server ends the
-- transaction with and receiptd's saves run again (DatabaseQueue).
CREATE FUNCTION receiptd_changed_one_row(changed bigint, what text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF changed <> 1 THEN
        RAISE EXCEPTION '% found its row changed by another transaction', what USING ERRCODE = 'serialization_failure';
    END IF;
END
$$;
