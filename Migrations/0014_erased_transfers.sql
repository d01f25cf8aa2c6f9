-- A purchase that goes with an erased person keeps, in the other holders' history, the transfers
-- that named them (the erased id reads '(erased)' there). Its transactions are gone, so the move
-- keeps the product it was of: written by the erasure, read when no transaction names it.
ALTER TABLE ownership_transfers ADD COLUMN product_id TEXT;
