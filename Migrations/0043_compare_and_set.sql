-- Issue 62: nothing on SQLite, whose one writer checks a compare-and-set's count as it runs (see
-- Migrations/postgresql/0043_compare_and_set.sql).
SELECT 1;
