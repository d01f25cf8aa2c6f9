-- How many transactions a purchase has, as the planner estimates it. ANALYZE samples rows page by
-- page, and where a purchase's transactions lie together (a bulk load: `receiptd copy-data` from
-- SQLite, a restore) it finds few distinct purchases: 43,177 for a million, so 224 transactions
-- each instead of about ten. Joins to a purchase's transactions (a subscriber's holdings, what the
-- rollup keeper and a drill-down read) then looked dear enough that it chose parallel sequential
-- scans of `ownership`: 127 ms a hundred holders at a million subscribers, against 1.6 ms by the
-- indexes, and the keeper's reads cost the cluster 2.3-2.8 ms of CPU a POST. A distinct purchase
-- per ten transactions (a year of monthly renewals) stands instead of the sample's guess
-- (https://www.postgresql.org/docs/15/sql-altertable.html, n_distinct): within a factor of ten
-- of any app's real ratio, the plans are the indexes' either way.
ALTER TABLE transactions ALTER COLUMN original_transaction_id SET (n_distinct = -0.1);
ANALYZE transactions;
