-- An erased purchase's transfers keep their product: see Migrations/0014_erased_transfers.sql.
ALTER TABLE ownership_transfers ADD COLUMN product_id TEXT;
