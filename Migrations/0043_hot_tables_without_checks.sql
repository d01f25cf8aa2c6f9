-- Issue 62: nothing on SQLite, which keeps its CHECK constraints (see
-- Migrations/postgresql/0043_hot_tables_without_checks.sql).
SELECT 1;
