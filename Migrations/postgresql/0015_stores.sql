-- Facts name their store: see Migrations/0015_stores.sql.
ALTER TABLE transactions ADD COLUMN store TEXT NOT NULL DEFAULT 'app_store';
