-- The charts of time kept split by storefront and by product (Docs/analytics.md#rollups): the
-- sums of rollup_days again, each with the dimension it is split by (`split`: country or product)
-- and its items' value of it (`split_value`), in a table of their own so that a chart nobody splits
-- reads no more rows. Empty until the keeper rebuilds, which the rollups' new format makes it do
-- (Analytics.Rollup.format 5); meanwhile a split query reads the ledger, as it did.
CREATE TABLE rollup_splits (
    environment TEXT NOT NULL,
    chart TEXT NOT NULL,
    split TEXT NOT NULL,
    measure TEXT NOT NULL,
    kind TEXT NOT NULL,
    settled INTEGER NOT NULL,
    bundle_id TEXT NOT NULL,
    store TEXT NOT NULL,
    note TEXT NOT NULL,
    split_value TEXT NOT NULL,
    at_day BIGINT NOT NULL,
    until_day BIGINT NOT NULL,
    valid_from_day BIGINT NOT NULL,
    valid_until_day BIGINT NOT NULL,
    cohort_day BIGINT NOT NULL,
    value BIGINT NOT NULL,
    items BIGINT NOT NULL,
    PRIMARY KEY (
        environment, chart, split, measure, kind, settled, bundle_id, store, note, split_value, at_day, until_day,
        valid_from_day, valid_until_day, cohort_day
    )
);
