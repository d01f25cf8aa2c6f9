-- Aliases (issue 22): see Migrations/0012_aliases.sql.
CREATE TABLE aliases (
    alias TEXT PRIMARY KEY NOT NULL,
    app_user_id TEXT NOT NULL REFERENCES subscribers (app_user_id),
    at BIGINT NOT NULL
);
CREATE INDEX aliases_by_user ON aliases (app_user_id);
