-- Export's page order: see Migrations/0018_export.sql.
CREATE INDEX transactions_by_written ON transactions (updated_at, transaction_id);
CREATE INDEX events_by_recorded ON events (recorded_at, id);
CREATE INDEX subscribers_by_written ON subscribers (updated_at, app_user_id);
