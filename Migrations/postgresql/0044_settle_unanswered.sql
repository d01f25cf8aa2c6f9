-- Issue 62: a settle's compare-and-set sent with the commit, unanswered
-- (ReceiptStore.settleUnanswered), must fail its transaction itself when it changes no row: a
-- client that checked the count afterwards would find the commit already made. The statement
-- passes its count here, and a count other than one raises SQLSTATE RD001, which ends the
-- transaction; receiptd reads the subscriber again and settles again (SubscriberState.current).
-- A code of receiptd's own, not a serialization failure, which the write queue would run again
-- unchanged.
CREATE FUNCTION receiptd_settled(changed bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF changed <> 1 THEN
        RAISE EXCEPTION 'a settle found its row changed by another transaction' USING ERRCODE = 'RD001';
    END IF;
END
$$;
