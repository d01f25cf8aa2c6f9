-- Issue 62: nothing on SQLite, whose one writer checks a compare-and-set's count as it runs (see
-- Migrations/postgresql/0044_settle_unanswered.sql).
SELECT 1;
