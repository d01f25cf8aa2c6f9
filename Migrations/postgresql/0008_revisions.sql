-- A subscriber's derived state (document fingerprint, version, events) is computed outside the
-- write that stores their facts: from a snapshot read, then written with a compare-and-set.
-- facts_revision counts the writes that changed their facts; derived_revision is the one the
-- stored state was derived from. They differ between the two writes, or after a crash between
-- them: the next read derives again. Rows that exist were derived in the same transaction as
-- their facts, so both start equal.
ALTER TABLE subscribers ADD COLUMN facts_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE subscribers ADD COLUMN derived_revision BIGINT NOT NULL DEFAULT 0;
