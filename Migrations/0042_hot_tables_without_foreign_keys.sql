-- Issue 62: nothing on SQLite, which keeps its foreign keys (see
-- Migrations/postgresql/0042_hot_tables_without_foreign_keys.sql).
SELECT 1;
