-- Issue 62: nothing on SQLite, whose one writer runs a save in-process (see
-- Migrations/postgresql/0045_whole_saves.sql).
SELECT 1;
