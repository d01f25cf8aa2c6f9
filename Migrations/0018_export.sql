-- `receiptd export-data` (Docs/export.md) reads each table in the order rows were last written,
-- a page at a time: these indexes make each page a range read instead of a sort of the table.
CREATE INDEX transactions_by_written ON transactions (updated_at, transaction_id);
CREATE INDEX events_by_recorded ON events (recorded_at, id);
CREATE INDEX subscribers_by_written ON subscribers (updated_at, app_user_id);
