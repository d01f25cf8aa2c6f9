-- Money in the facts: see Migrations/0016_money.sql.
ALTER TABLE transactions ADD COLUMN price BIGINT CHECK (price >= 0);
ALTER TABLE transactions ADD COLUMN currency TEXT;
ALTER TABLE transactions ADD COLUMN price_source TEXT CHECK (price_source IN ('store', 'store_history', 'client'));
ALTER TABLE transactions ADD COLUMN storefront TEXT;
ALTER TABLE transactions ADD COLUMN offer_type BIGINT;
ALTER TABLE transactions ADD COLUMN offer_discount_type TEXT;
ALTER TABLE transactions ADD COLUMN offer_period TEXT;
ALTER TABLE transactions ADD COLUMN transaction_reason TEXT;
ALTER TABLE transactions ADD COLUMN revocation_type TEXT;
ALTER TABLE transactions ADD COLUMN revocation_percentage BIGINT;
ALTER TABLE transactions ADD COLUMN billing_plan_type TEXT;
ALTER TABLE transactions ADD COLUMN commitment_period_number BIGINT;
ALTER TABLE transactions ADD COLUMN commitment_total_periods BIGINT;
ALTER TABLE transactions ADD COLUMN commitment_price BIGINT;
ALTER TABLE transactions ADD COLUMN commitment_expires_date BIGINT;
CREATE TABLE exchange_rates (
    day TEXT NOT NULL,
    currency TEXT NOT NULL,
    per_euro TEXT NOT NULL,
    PRIMARY KEY (day, currency)
);
