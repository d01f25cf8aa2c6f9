-- Issue 61: see Migrations/0038_first_seen.sql.
ALTER TABLE subscribers ADD COLUMN first_seen_at BIGINT;
UPDATE subscribers SET first_seen_at = created_at;
