-- Money in the facts (Docs/analytics.md). Each transaction keeps what its store said about money
-- and terms; `price` is integer milliunits of `currency` (9.99 is 9990), never a float, and
-- `price_source` says who stated it (Entitlements.PriceSource: store, store_history, client;
-- the price table is read at query time and never stored). Rows stored before this migration
-- get their signed data's money from `receiptd rederive`.
ALTER TABLE transactions ADD COLUMN price INTEGER CHECK (price >= 0);
ALTER TABLE transactions ADD COLUMN currency TEXT;
ALTER TABLE transactions ADD COLUMN price_source TEXT CHECK (price_source IN ('store', 'store_history', 'client'));
ALTER TABLE transactions ADD COLUMN storefront TEXT;
ALTER TABLE transactions ADD COLUMN offer_type INTEGER;
ALTER TABLE transactions ADD COLUMN offer_discount_type TEXT;
ALTER TABLE transactions ADD COLUMN offer_period TEXT;
ALTER TABLE transactions ADD COLUMN transaction_reason TEXT;
ALTER TABLE transactions ADD COLUMN revocation_type TEXT;
ALTER TABLE transactions ADD COLUMN revocation_percentage INTEGER;
ALTER TABLE transactions ADD COLUMN billing_plan_type TEXT;
ALTER TABLE transactions ADD COLUMN commitment_period_number INTEGER;
ALTER TABLE transactions ADD COLUMN commitment_total_periods INTEGER;
ALTER TABLE transactions ADD COLUMN commitment_price INTEGER;
ALTER TABLE transactions ADD COLUMN commitment_expires_date INTEGER;

-- Reference exchange rates the operator loaded (`receiptd rates import`, the ECB's CSV): units
-- of `currency` per euro on `day` (YYYY-MM-DD), kept as the exact decimal text published.
CREATE TABLE exchange_rates (
    day TEXT NOT NULL,
    currency TEXT NOT NULL,
    per_euro TEXT NOT NULL,
    PRIMARY KEY (day, currency)
) STRICT;
