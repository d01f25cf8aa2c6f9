-- Issue 62: see Migrations/0041_kept_documents.sql.
ALTER TABLE subscribers ADD COLUMN document TEXT;
ALTER TABLE subscribers ADD COLUMN document_cut BIGINT;
ALTER TABLE subscribers ADD COLUMN document_at BIGINT;
ALTER TABLE subscribers ADD COLUMN document_settings TEXT;
