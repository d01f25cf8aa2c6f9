-- Issue 62: each person's document kept rendered beside their facts, so that a read whose
-- document is still true is one row (Sources/Storage/DocumentStore.swift). `document` is the
-- document's JSON without `request_date`'s value, which goes at byte `document_cut`; it was
-- derived at `document_at` with the entitlement settings whose fingerprint is `document_settings`,
-- and reads the same until `summary_until`, while `derived_revision` is `facts_revision`. A change
-- of facts clears it (ReceiptStore.factsChanged), so an erased alias leaves no trace in it.
ALTER TABLE subscribers ADD COLUMN document TEXT;
ALTER TABLE subscribers ADD COLUMN document_cut INTEGER;
ALTER TABLE subscribers ADD COLUMN document_at INTEGER;
ALTER TABLE subscribers ADD COLUMN document_settings TEXT;
